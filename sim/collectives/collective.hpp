// Collectives expand into point-to-point transfers and delays on a TaskGraph, so that they run
// over the real links of the platform and contend with everything else in flight.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

enum class CollectiveOp { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Gather, Scatter, AllToAll, SendRecv };

const char* to_string(CollectiveOp op);

/// The category of a collective's tasks where nothing names a purpose for it (the nccl-tests sweep).
TaskCategory category_of(CollectiveOp op);

struct CollectiveCall {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::vector<int> ranks;   ///< devices taking part (GPU device indices), in communicator rank order
  double bytes = 0;         ///< as nccl-tests counts it: the per-rank buffer for AllReduce/Broadcast/Reduce/
                            ///< SendRecv, the total (n x per-rank) for AllGather/ReduceScatter/Gather/Scatter,
                            ///< each rank's send buffer (n pieces of bytes/n) for AllToAll
  int root = 0;             ///< index into `ranks` for rooted collectives
  std::string label;        ///< e.g. "bucket 2"; prefixes task names
  TaskCategory category = TaskCategory::AllReduce;
};

/// Where a collective sits in the graph: rank i's part may start once start_after[i] tasks are
/// done (all ranks' lists may be equal); done[i] is the task after which rank i has its result.
struct CollectiveTasks {
  std::vector<int> done;
  std::string algorithm;     ///< what ran, e.g. "Ring/Simple", "NVLS/Simple"
  double predicted_us = 0;   ///< NCCL's own cost-model estimate for it (tuning.cc), microseconds
  int channels = 1;          ///< NCCL channels it runs on: one CUDA block (CTA) each, on one SM
};

/// Appends `call` to `graph` as NCCL would run it on this machine: NCCL's (algorithm, protocol)
/// choice, its channels as rings over distinct links, its latencies and protocol overheads (see
/// collective_options.hpp for NCCL_ALGO / NCCL_PROTO and calibrated parameters). `start_after[i]` are the tasks rank i waits for (may be empty).
CollectiveTasks add_collective(TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after);

}  // namespace dtsim
