// FSDP2's copies (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, _fsdp_param_group.py,
// _fsdp_param.py), each memory traffic: its elements read in one dtype and written in another.
//  - Before each AllGather, the rank's shard copied into the gather's input (foreach_all_gather's
//    all_gather_copy_in, on its own stream under implicit prefetching): forward, the sharded parameter
//    read in its own dtype and written in param_dtype; backward after a reshard to fewer ranks
//    (reshard_after_forward an int), the kept 1/K in param_dtype. FSDP1 with a param_dtype other
//    than its shards' moves the same bytes: its pre-unshard stream casts each shard into the
//    low-precision copy it AllGathers (_flat_param.py _use_low_precision_shard).
//  - On the compute stream, the gathered parameters copied out of the gather's output
//    (foreach_all_gather_copy_out, in wait_for_unshard) before each unit's forward, and again before
//    its backward when it was resharded.
//  - In each unit's post_backward, on the compute stream: on a micro-step that reduces, the unsharded
//    gradients copied into the reduce dtype's flat buffer (foreach_reduce_scatter_copy_in's chunk_cat)
//    before the reduce-scatter stream waits for the compute stream; under no_sync with a reduce dtype
//    other than the gradients', the accumulated gradient kept in the reduce dtype: a cast (usually an
//    upcast to fp32) on the first micro-step (FSDPParam.to_accumulated_grad_if_needed), an addition
//    on each later one (accumulate_unsharded_grad_if_needed); the copy-in then reads it.
#pragma once

#include "sim/topology/gpu_spec.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct Fsdp2Copies {
  bool accumulates_upcast = false;  ///< no_sync over several micro-steps, reduce dtype not the gradients'
  /// Per unit: the shard into the AllGather's input (forward; backward), the gathered parameters out.
  std::vector<double> copy_in_s, copy_in_backward_s, copy_out_s;
  /// Per unit: the gradients into the reduce dtype's buffer; under no_sync the upcast and the addition.
  std::vector<double> grad_copy_in_s, upcast_s, accumulate_s;

  /// Seconds of one iteration of `micro_steps`, `reductions` of which reduce: the gradients' copies.
  double gradients_per_iteration_s(int reductions, int micro_steps) const;
  /// ... the copy-outs (`backward`: also before each backward, all units but the root).
  double copy_out_per_iteration_s(int micro_steps, bool backward) const;
  /// ... the copy-ins (`backward`: also before each backward AllGather).
  double copy_in_per_iteration_s(int micro_steps, bool backward) const;
};

struct Fsdp2CopyDtypes {
  double sharded = 4;  ///< bytes per element of the sharded parameter
  double grad = 2;     ///< of the unsharded parameters and gradients (param_dtype)
  double reduce = 4;   ///< reduce_dtype
};

/// The copies of units of `unit_params` parameters each (per tensor rank), `unit_gather_bytes` gathered,
/// sharded over `shard_ranks` (`backward_ranks` after a reshard to fewer); `accumulates_upcast`: no_sync
/// over several micro-steps with a reduce dtype other than the gradients'.
Fsdp2Copies fsdp2_copies_of(const std::vector<double>& unit_params, const std::vector<double>& unit_gather_bytes,
                            const Fsdp2CopyDtypes& bytes, int shard_ranks, int backward_ranks, bool accumulates_upcast,
                            const GpuSpec& gpu);

/// The run note: each kind's seconds per iteration.
std::string fsdp2_copies_note(double copy_out_s, bool backward, double gradients_s, double copy_in_s);
/// FSDP1's run note: the copy-in's traffic is its cast of each `sharded` shard into the `gathered`-dtype
/// copy it AllGathers (_flat_param.py _use_low_precision_shard), `copy_in_s` per iteration.
std::string fsdp1_cast_note(const std::string& sharded, const std::string& gathered, double copy_in_s);

}  // namespace dtsim
