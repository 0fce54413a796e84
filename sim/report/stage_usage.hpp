// Per pipeline stage, where one of its GPUs spends a steady-state iteration: forward, backward,
// recomputation, tensor-parallel collectives, pipeline sends, data-parallel and embedding
// gradient collectives, the optimizer, and the rest, waiting (the bubble and stragglers). Read off
// each stage's GPU with the most compute (Plan::stage_gpus; every GPU of a stage runs the same
// schedule, and with step-time jitter the stage keeps its slowest GPU's pace).
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct StageUsage {
  int stage = 0;
  std::string device;         ///< the GPU read, e.g. "n0.gpu0"
  double forward_s = 0, backward_s = 0, recompute_s = 0, optimizer_s = 0;
  /// Communication columns: a collective's transfers from this GPU and its NCCL start-up on it (or a
  /// folded plan's delay standing for both).
  double tensor_parallel_s = 0;  ///< its tensor-parallel collectives in flight, outside its compute
  double pipeline_s = 0;         ///< its activation / gradient sends to the next or previous stage in flight, outside the above
  double data_parallel_s = 0;    ///< gradient and parameter collectives (and the embedding's) in flight, outside the above
  double waiting_s = 0;          ///< the rest of the iteration: the bubble, and waiting for other stages or ranks
};

/// Means over the measured iterations; empty unless the plan has pipeline stages.
std::vector<StageUsage> stage_usage(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                                    double iteration_time_s);

}  // namespace dtsim
