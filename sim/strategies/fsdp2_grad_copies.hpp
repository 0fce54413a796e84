// FSDP2's copies of each unit's gradients on the compute stream, in its post-backward
// (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py post_backward, _fsdp_collectives.py
// foreach_reduce):
//  - on a micro-step that reduces, the unsharded gradients copied into the reduce dtype's flat
//    buffer (foreach_reduce_scatter_copy_in's chunk_cat), before the reduce-scatter stream waits
//    for the compute stream;
//  - under no_sync with a reduce dtype other than the gradients', the accumulated gradient kept in
//    the reduce dtype: a cast (usually an upcast to fp32) on the first micro-step
//    (FSDPParam.to_accumulated_grad_if_needed), an addition on each later one
//    (accumulate_unsharded_grad_if_needed); the copy-in then reads it.
// Each is memory traffic: its elements read in one dtype and written in another.
#pragma once

#include "sim/topology/gpu_spec.hpp"

#include <vector>

namespace dtsim {

struct Fsdp2GradCopies {
  bool accumulates_upcast = false;  ///< no_sync over several micro-steps, reduce dtype not the gradients'
  std::vector<double> copy_in_s, upcast_s, accumulate_s;  ///< per unit

  /// Seconds of one iteration of `micro_steps`, `reductions` of which reduce.
  double per_iteration_s(int reductions, int micro_steps) const;
};

/// The copies of units of `unit_params` parameters each (per tensor rank) with gradients of
/// `grad_bytes` per element reduced in `reduce_bytes`; `accumulates_upcast`: no_sync over several
/// micro-steps with a reduce dtype other than the gradients'.
Fsdp2GradCopies fsdp2_grad_copies(const std::vector<double>& unit_params, double grad_bytes, double reduce_bytes,
                                  bool accumulates_upcast, const GpuSpec& gpu);

}  // namespace dtsim
