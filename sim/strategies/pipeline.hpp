// Model parallelism with layers split across GPUs, and its hybrids.
//
// pipeline: one model replica whose layers are split into as many stages as GPUs (explicit
//   `balance`, layers per stage, or automatic by compute); each mini-batch is cut into
//   `microbatches` micro-batches; activations go forward and their gradients backward over the real
//   links. microbatches = 1 is the naive split (one GPU idle while the other works). Schedules:
//   "gpipe" (all forwards, then all backwards; the default of `pipeline`, torch's Pipe) and "1f1b"
//   (PipeDream-flush: after a warm-up of p - s - 1 forwards, stage s alternates one forward and one
//   backward; the default of `hybrid`, as Megatron-LM's schedules.py get_forward_backward_func
//   never runs GPipe).
// hybrid: `data` replicas of a pipeline of `pipeline_stages` stages, each stage split over
//   `tensor_parallel` GPUs as Megatron-LM runs it: per transformer layer two tensor-parallel
//   AllReduces forward and two backward, each on its rank's critical path, plus the vocabulary-
//   parallel embedding and cross entropy (megatron_stage.hpp); `sequence_parallel` turns each into
//   a ReduceScatter and an AllGather. Gradients of each (stage, tensor rank) are AllReduced across
//   the data-parallel replicas in buckets once that stage's last backward is done
//   (`distributed_optimizer`: ReduceScatter, the optimizer on 1/dp of them, then an AllGather of
//   the parameters, Megatron's ZeRO-1), then the tied word embedding's gradient is AllReduced
//   between the first and last stage (megatron/core/distributed/finalize_model_grads.py).
//   GPU layout: `rank_order`, innermost first: Megatron's "tp-dp-pp" by default
//   (megatron/core/parallel_state.py, RankGenerator order "tp-cp-ep-dp-pp"), or e.g. "tp-pp-dp"
//   (the seed's DDP + model parallel: replica r uses GPUs 2r and 2r+1).
// Stages: models with transformer layers are split as Megatron does, evenly by transformer layer
// with embeddings on the first stage and head and loss on the last; `balance` then counts
// transformer layers per stage. Other models (CNNs) split by compute, `balance` counting layer-
// table rows as torchgpipe's does.
// training.batch_per_gpu is read as the batch of one replica (one pipeline), as the seed's
// DataLoader per process; training.micro_batch and global_batch give it in Megatron's words.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <array>
#include <string>

namespace dtsim {

enum class PipelineSchedule { GPipe, OneFOneB };

/// One parallel dimension of the rank layout.
enum class ParallelDim { Tensor, Data, Pipeline };

/// How global ranks are numbered over (data d, stage s, tensor t): `inner_to_outer[0]` varies fastest.
struct RankOrder {
  std::array<ParallelDim, 3> inner_to_outer{ParallelDim::Tensor, ParallelDim::Data, ParallelDim::Pipeline};
  /// The index among the plan's ranks of (d, s, t) with D replicas, P stages, T tensor ranks.
  int index(int d, int s, int t, int D, int P, int T) const;
};

/// strategy.rank_order: "tp-dp-pp" and the other orders of tp, dp and pp, innermost first.
RankOrder parse_rank_order(const JsonReader& value);

/// The order as strategy.rank_order spells it ("tp-dp-pp").
std::string to_string(const RankOrder& order);

struct ParallelConfig {
  int data = 1;
  int stages = 1;
  int tensor = 1;
  int microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::GPipe;  ///< build_hybrid_plan sets 1F1B (Megatron's) before the options
  int virtual_stages = 1;              ///< model chunks per GPU: > 1 is Megatron's interleaved 1F1B
  std::vector<StageRange> ranges;      ///< per virtual stage, chunk-major (c * stages + s; empty: automatic)
  double bucket_cap_mb = 25;           ///< data-parallel gradient buckets
  double half_efficiency_samples = 0;  ///< see compute_time.hpp
  RankOrder order;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  bool tp_backward_overlap = true;     ///< Megatron's asynchronous backward TP collectives (megatron_stage.hpp)
  /// Megatron-LM 2021-2022's scatter/gather of the pipeline's sends (Narayanan et al. SC21 section 4.1;
  /// megatron/p2p_communication.py, args.scatter_gather_tensors_in_pipeline, on by default then, gone with
  /// the move to megatron/core in 2023): without sequence parallelism each tensor rank sends 1/t of the
  /// boundary tensor and the receiving stage AllGathers it over its tensor group (parallel_build.hpp).
  bool scatter_gather_tensors_in_pipeline = false;
  bool megatron = false;          ///< Megatron-LM's kernels and buffers (hybrid), not torch's Pipe (pipeline): memory_timeline.hpp
};

/// (stage, micro-batch) operations of one stage in schedule order: {is_backward, micro}.
std::vector<std::pair<bool, int>> stage_schedule(PipelineSchedule schedule, int stage, int stages, int microbatches);

/// One operation of a GPU in an interleaved schedule: a micro-batch through one of its model chunks.
struct ChunkOp {
  bool backward = false;
  int micro = 0;
  int chunk = 0;  ///< its virtual stage is chunk * stages + stage
};

/// Megatron-LM's interleaved 1F1B (schedules.py, forward_backward_pipelining_with_interleaving):
/// micro-batches go through the `chunks` model chunks in groups of `stages`; stage s runs
/// (stages - s - 1) * 2 + (chunks - 1) * stages warm-up forwards (at most all of them), then one
/// forward and one backward in turn, then the remaining backwards.
/// Needs microbatches % stages == 0, as Megatron asserts.
std::vector<ChunkOp> interleaved_schedule(int stage, int stages, int microbatches, int chunks);

/// Per model chunk of stage `stage`, the micro-batches whose activations it holds at the moment of
/// `config`'s schedule (walked: forwards run minus backwards run) when the chunks' sum weighted by
/// `chunk_weights` (one per chunk: a micro-batch's activations in it) is highest. One chunk: 1F1B
/// min(stages - stage, microbatches), GPipe every one. Interleaved (Megatron's order: forwards chunk
/// by chunk in groups of `stages`, backwards from the last chunk): on stage 0 of 4 with 2 chunks and
/// 8 micro-batches, 7 and 4.
std::vector<int> micro_batches_in_flight(const ParallelConfig& config, int stage, const std::vector<double>& chunk_weights);

Plan build_pipeline_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                         int warmup, const CollectiveOptions& collectives = {});
Plan build_hybrid_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                       int warmup, const CollectiveOptions& collectives = {});

/// The builder both use.
Plan build_parallel_plan(const Scenario& scenario, const Topology& topology, const Model& model,
                         const ParallelConfig& config, int iterations, int warmup,
                         const CollectiveOptions& collectives = {});

}  // namespace dtsim
