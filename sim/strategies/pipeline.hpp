// Model parallelism with layers split across GPUs, and its hybrids.
//
// pipeline: one model replica whose layers are split into as many stages as GPUs (explicit
//   `balance`, layers per stage, or automatic by compute); each mini-batch is cut into
//   `microbatches` micro-batches; activations go forward and their gradients backward over the real
//   links. microbatches = 1 is the naive split (one GPU idle while the other works). Schedules:
//   "gpipe" (all forwards, then all backwards) and "1f1b" (PipeDream-flush: after a warm-up of
//   p - s - 1 forwards, stage s alternates one forward and one backward).
// hybrid: `data` replicas of a pipeline of `pipeline_stages` stages, each stage split over
//   `tensor_parallel` GPUs (Megatron-style: every row-parallel linear of a transformer block ends
//   in an AllReduce of its output among the stage's GPUs, forward and backward). Gradients of each
//   (stage, tensor rank) are AllReduced across the data-parallel replicas in buckets once that
//   stage's last backward is done. GPU layout: tensor rank innermost, then stage, then replica
//   (the seed's DDP + model parallel: replica r uses GPUs 2r and 2r+1).
// training.batch_per_gpu is read as the batch of one replica (one pipeline), as the seed's
// DataLoader per process.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

namespace dtsim {

enum class PipelineSchedule { GPipe, OneFOneB };

struct ParallelConfig {
  int data = 1;
  int stages = 1;
  int tensor = 1;
  int microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  std::vector<StageRange> ranges;      ///< per stage (empty: automatic)
  double bucket_cap_mb = 25;           ///< data-parallel gradient buckets
  double half_efficiency_samples = 0;  ///< see compute_time.hpp
};

/// (stage, micro-batch) operations of one stage in schedule order: {is_backward, micro}.
std::vector<std::pair<bool, int>> stage_schedule(PipelineSchedule schedule, int stage, int stages, int microbatches);

Plan build_pipeline_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                         int warmup, const CollectiveOptions& collectives = {});
Plan build_hybrid_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                       int warmup, const CollectiveOptions& collectives = {});

/// The builder both use.
Plan build_parallel_plan(const Scenario& scenario, const Topology& topology, const Model& model,
                         const ParallelConfig& config, int iterations, int warmup,
                         const CollectiveOptions& collectives = {});

}  // namespace dtsim
