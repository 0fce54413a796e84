// Options of a collective's expansion: the user's NCCL_ALGO / NCCL_PROTO restriction, calibrated
// NCCL parameters, or the textbook ring (no protocol overheads, no latencies) for closed-form checks.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_params.hpp"
#include "sim/collectives/nccl_tuning.hpp"

#include <functional>
#include <optional>

namespace dtsim {

class ExpansionMemo;

struct CollectiveOptions {
  NcclFilter filter;                 ///< empty: NCCL's own choice
  std::optional<NcclParams> params;  ///< empty: NcclParams::defaults(GPU compute capability)
  bool ideal = false;                ///< one ring in rank order at line rate, no latencies (the tree
                                     ///< instead when filter.algos is exactly {Tree}, AllReduce)
  /// GPUs whose kernels one host thread launches (nccl-tests -g): each launch adds
  /// NcclParams::launch_overhead_us before the collective starts. 1 for one process per GPU (DDP,
  /// MPI runs); 8 for a single-process nccl-tests run on 8 GPUs.
  int gpus_per_thread = 1;
  /// Where expansions are remembered and copied when the same call comes again (none: each one
  /// expands anew; expansion_memo.hpp). It keys on the topology's address: one per plan build.
  ExpansionMemo* memo = nullptr;
  /// Called with the graph and the collective's index once each collective is added, `expanded`
  /// true when it was expanded anew (not a memo's copy): the replay starts simulating collectives
  /// while the plan is still being built (IsolatedRunPool, isolated_runs.hpp).
  std::function<void(const TaskGraph& graph, int collective, bool expanded)> on_collective;
  /// The plan simulates one representative GPU of each set of identical ones (every data-parallel
  /// replica and tensor rank of a Megatron stage, every rank of an FSDP or ZeRO run), its
  /// communications timed on their own with the images that run beside them (folded_comms.hpp).
  /// Builders that have no such symmetry ignore it.
  bool fold_ranks = false;
};

CollectiveTasks add_collective(TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after, const CollectiveOptions& options);

/// NCCL's latency for `cost` split into base, intra-node and inter-node hops (us, unscaled),
/// including nccl_cost's multi-node factor. Direct operations (AllToAll, SendRecv, Gather,
/// Scatter): Ring/Simple base + one hop (NET hop across nodes).
NcclLatencyParts collective_latency_parts(const NcclSystem& system, CollectiveOp op, const NcclCost& cost);
/// The per-rank start-up delay (us): launch overhead x gpus_per_thread + base + hop_scale(class) x
/// intra-node hops + net_hop_scale(protocol) x inter-node hops.
double collective_startup_us(const NcclLatencyParts& parts, const NcclCost& cost, const NcclParams& p,
                             int gpus_per_thread);

/// The NCCL decision for `call` on this topology, without adding tasks.
NcclCost choose_collective_algorithm(const Topology& topology, const CollectiveCall& call,
                                     const NcclFilter& filter = {});

}  // namespace dtsim
