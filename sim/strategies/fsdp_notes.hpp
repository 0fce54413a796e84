// What an FSDP run reports about its plan: the collectives and host copies of one iteration, per
// communicator, and the notes on how it shards, gathers and reduces. Formatting only: the figures
// come from the plan builder (fsdp.cpp).
#pragma once

#include "sim/strategies/fsdp_groups.hpp"
#include "sim/strategies/fsdp_units.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/strategies/sharding_options.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// What fsdp.cpp found while building the plan, as the figures and notes read it.
struct FsdpPlanFacts {
  int data = 1;            ///< D: data-parallel ranks
  int tensor = 1;          ///< T: tensor ranks in each
  int shard = 1;           ///< S: ranks a parameter is sharded over
  int backward = 1;        ///< K: the backward AllGather's world
  int ranks = 1;           ///< every GPU of the plan
  int micro_steps = 1;     ///< M
  int syncs = 1;           ///< micro-steps that reduce (1 under no_sync)
  bool sharded = true;     ///< sharded over more than one rank
  bool unshards = true;    ///< keeps unsharded buffers (keeps_unsharded_buffers)
  bool gather_backward = true;             ///< gathered again for backward
  bool limited = true;                     ///< the rate limiter runs
  bool kept_across_micro_steps = false;    ///< only the first micro-step gathers in forward
  double reduce_bytes = 4;                 ///< per gradient element (reduce_dtype)
  double h2d_bytes = 0, d2h_bytes = 0;     ///< CPU offload: per rank, one iteration's copies
  const FsdpUnitBytes* units = nullptr;
  const FsdpGroups* groups = nullptr;
  const std::vector<std::vector<StagePiece>>* pieces = nullptr;  ///< per segment (tensor-parallel traffic)
};

/// Appends to `out` the collectives of one iteration per communicator, and CPU offload's copies.
void add_fsdp_comm_per_iteration(const FsdpOptions& opt, const FsdpPlanFacts& f, std::vector<CommGroup>& out);

/// The run's first note: version, sharding, dtypes and how the units are gathered for backward.
std::string fsdp_plan_note(const FsdpOptions& opt, const FsdpPlanFacts& f);
/// With more than one micro-step: which reduce, and whether the host waits after each.
std::string fsdp_micro_steps_note(const FsdpOptions& opt, int micro_steps, bool host_sync);
/// With tensor parallelism inside each data rank; `chunk_cat_s`: its layout copies per iteration
/// (TensorParallelOptions::chunk_cat_s_per_byte).
std::string fsdp_tensor_parallel_note(const FsdpOptions& opt, int tensor, double chunk_cat_s);

}  // namespace dtsim
