// FSDP1's passes over each unit's gradient on its post-backward stream, around the reduction
// (torch/distributed/fsdp/_runtime_utils.py _post_backward_hook / _reduce_grad; the default
// communication hooks, torch/distributed/algorithms/_comm_hooks/default_hooks.py):
//  - before it, on the unsharded gradient (every parameter of the unit): the cast to reduce_dtype
//    when autograd produced it in another dtype (param_dtype: `flat_param.grad.to(reduce_dtype)`),
//    then the pre-division by the group's gradient predivide factor (`_div_if_needed`, in place);
//  - after it, on the reduced shard (1/S of the unit): the post-division, HSDP's AllReduce across
//    the replicas with its own pre- and post-division, the cast back to the sharded parameter's
//    dtype (`_cast_grad_to_param_dtype`) and, on a later micro-step without no_sync, the addition
//    into the shard kept from the earlier ones (`_saved_grad_shard += new_sharded_grad`).
// The reduction is issued from that stream and waited for there (a synchronous collective waits
// on the current stream), so the stream runs unit after unit: passes, reduction, passes.
// Each pass is memory traffic: its elements read in one dtype and written in another.
#pragma once

#include "sim/topology/gpu_spec.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// DefaultState's gradient_predivide_factor of a group of `world_size` ranks: f doubled from 1 while
/// f divides the world size and world_size / f > f (1 for one rank, 2 for 2 to 5 and every odd size,
/// 4 for 8 and 16, 8 for 32 and 64). The post-division factor is world_size / f.
double gradient_predivide_factor(int world_size);

struct Fsdp1GradPasses {
  std::vector<double> before_s;       ///< per unit: cast and pre-division of the unsharded gradient
  std::vector<double> after_s;        ///< per unit: post-division and cast of the reduced shard
  std::vector<double> accumulate_s;   ///< per unit: the addition into the kept shard (later micro-steps)
  double predivide = 1, postdivide = 1;
  std::string cast_before, cast_after;  ///< the dtype each cast writes ("": none)
  bool sharded = true;                  ///< the reduction leaves a shard (false: NO_SHARD's AllReduce)

  /// Seconds of one iteration of `micro_steps`, `reductions` of which reduce (every one: also the
  /// additions on all but the first).
  double per_iteration_s(int reductions, int micro_steps) const;
};

struct Fsdp1GradDtypes {
  std::string grad;     ///< the unsharded gradient's (param_dtype)
  std::string reduce;   ///< reduce_dtype
  std::string sharded;  ///< the FlatParameter's own (the sharded parameter's)
};

/// The passes of units of `unit_params` parameters each (per tensor rank) reduced over a group of
/// `reduce_world` ranks (the shard group; NO_SHARD: every data rank) into shards of 1/`shard_ranks`;
/// `replicas` > 1: HSDP's AllReduce of each shard across that many replicas. The addition into the kept
/// shard is FlatParameter's `_saved_grad_shard`, so sharded groups only (`shard_ranks` > 1).
Fsdp1GradPasses fsdp1_grad_passes(const std::vector<double>& unit_params, const Fsdp1GradDtypes& dtypes, int reduce_world,
                                  int shard_ranks, int replicas, const GpuSpec& gpu);

/// The run note: what the passes do and their `per_iteration_s`; `accumulates`: later micro-steps
/// add into the kept shard.
std::string fsdp1_grad_passes_note(const Fsdp1GradPasses& passes, double per_iteration_s, bool accumulates);

}  // namespace dtsim
