// Options of a collective's expansion: the user's NCCL_ALGO / NCCL_PROTO restriction, calibrated
// NCCL parameters, or the textbook ring (no protocol overheads, no latencies) for closed-form checks.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_params.hpp"
#include "sim/collectives/nccl_tuning.hpp"

#include <optional>

namespace dtsim {

struct CollectiveOptions {
  NcclFilter filter;                 ///< empty: NCCL's own choice
  std::optional<NcclParams> params;  ///< empty: NcclParams::defaults(GPU compute capability)
  bool ideal = false;                ///< one ring in rank order at line rate, no latencies (the tree
                                     ///< instead when filter.algos is exactly {Tree}, AllReduce)
};

CollectiveTasks add_collective(TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after, const CollectiveOptions& options);

/// The NCCL decision for `call` on this topology, without adding tasks.
NcclCost choose_collective_algorithm(const Topology& topology, const CollectiveCall& call,
                                     const NcclFilter& filter = {});

}  // namespace dtsim
