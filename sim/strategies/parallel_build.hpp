// The state build_parallel_plan (pipeline.hpp) works on, and its parts, one file each:
//   parallel_builder.cpp     set-up: the degrees, the stages' costs, the traffic per iteration, the iterations
//   parallel_stage_op.cpp    one micro-batch's forward or backward on one stage of one replica
//   parallel_step_end.cpp    the end of an iteration: data-parallel gradients, tied embedding, optimizer
//   parallel_plan_notes.cpp  the plan's memory, notes, step-time jitter and folding
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/folded_comms.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/pipeline.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// One virtual stage's work per micro-batch.
struct StageCost {
  double fwd = 0, bwd = 0;         ///< one micro-batch on one tensor rank (recomputation included in bwd)
  std::vector<StagePiece> pieces;  ///< the same, cut where tensor-parallel collectives fall
  double send_bytes = 0;           ///< boundary activation (or its gradient) per micro-batch, whole stage
  double params = 0;               ///< parameters of the whole stage
};

/// A data x pipeline x tensor parallel plan being built: the scenario's inputs read once, the degrees,
/// each stage's cost, and each simulated GPU's last task so far.
struct ParallelBuild {
  ParallelBuild(const Scenario& scenario, const Topology& topology, const Model& model, const ParallelConfig& cfg,
                const CollectiveOptions& collectives, Plan& plan);

  const Scenario& scenario;
  const Topology& topology;
  const Model& model;
  const ParallelConfig& cfg;
  const CollectiveOptions& collectives;
  Plan& plan;

  /// Data replicas, pipeline stages, tensor ranks, micro-batches; model chunks per GPU and virtual
  /// stages, chunk-major (vs = chunk * P + s): one per stage unless interleaved (Megatron's virtual
  /// pipeline: GPU s holds chunks s, P + s, 2P + s, ...).
  int D = 1, P = 1, T = 1, M = 1, C = 1, V = 1;
  /// Folded (folded_comms.hpp): replica 0's tensor rank 0 of each stage stands for the stage's D x T
  /// GPUs, which run the same schedule; its communications are timed with their images.
  bool fold = false;
  int Dn = 1, Tn = 1;  ///< replicas and tensor ranks simulated
  std::optional<FoldedComms> folded;

  double batch = 0, micro = 0;  ///< samples per replica and iteration, per micro-batch
  MemoryRules mem;
  LayerTimes full;              ///< the whole batch through the whole model on one tensor rank
  std::vector<StageRange> ranges;        ///< per virtual stage
  std::vector<StageCost> sc;             ///< per virtual stage
  std::vector<double> stage_params;      ///< per GPU stage: parameters of all its chunks
  std::vector<double> stage_compute;     ///< per GPU stage: compute of one micro-batch through all its chunks
  std::vector<double> overlap_slowdown;  ///< per GPU stage, one iteration: GEMMs beside backward TP collectives
  int overlap_channels = 0;

  /// Megatron's word embedding tied to the output layer, on two stages: its gradient is summed
  /// between them (finalize_model_grads.py, _allreduce_embedding_grads).
  bool embedding_sync = false;
  double embedding_params = 0;
  bool half_weights = false;
  /// Megatron's optimizer step, when compute comes from FLOPs (a measured step already holds it; the
  /// seed's pipeline and DDP leave it out of FLOP-based compute as before).
  bool add_optimizer = false;
  bool roofline = false;   ///< the roofline model times every memory-bound pass of Megatron's optimizer
  double param_elem = 4;   ///< bytes per weight, as the distributed optimizer gathers them
  double grad_elem = 4;    ///< bytes per gradient element

  std::vector<int> last;   ///< per GPU rank index: its last task

  std::size_t idx(int d, int s, int t) const { return static_cast<std::size_t>(cfg.order.index(d, s, t, D, P, T)); }
  int dev(int d, int s, int t) const { return plan.ranks[idx(d, s, t)]; }
  int stage_of(int vs) const { return vs % P; }
  /// Whether the pipeline's sends are scattered and gathered as Megatron-LM 2021-2022 did
  /// (megatron/p2p_communication.py _communicate, 2022: `args.scatter_gather_tensors_in_pipeline and not
  /// args.sequence_parallel`; it falls back to whole sends when t does not divide the tensor's elements,
  /// which Megatron's hidden % t == 0 rules out). With one tensor rank there is nothing to split.
  bool pipeline_scatter_gather() const
  {
    return cfg.scatter_gather_tensors_in_pipeline && !cfg.sequence_parallel && T > 1;
  }
  /// Each tensor rank's boundary send out of virtual stage `vs` per micro-batch: the sequence's 1/T with
  /// sequence parallelism, else the whole s x b x h (megatron/core/pipeline_parallel/schedules.py:
  /// get_tensor_shapes divides the sequence by the tensor group's size only if config.sequence_parallel),
  /// or its 1/T as a flat chunk with pipeline_scatter_gather() (split_tensor_into_1d_equal_chunks: tensor
  /// rank r sends elements [r n/t, (r+1) n/t) to its peer; the receiver gathers the rest).
  double boundary_bytes(int vs) const
  {
    return sc[static_cast<std::size_t>(vs)].send_bytes / (cfg.sequence_parallel || pipeline_scatter_gather() ? T : 1);
  }
  std::string stage_name(int vs) const;
};

/// The bytes of each data-parallel gradient bucket of GPU stage `s` (one tensor rank's share):
/// cfg.bucket_cap_mb each, the last one the rest. Megatron-LM's distributed optimizer gathers the
/// updated parameters in the same buckets (megatron/core/distributed/param_and_grad_buffer.py: a
/// bucket holds both its parameters' and their gradients' views), each of its parameters' bytes.
std::vector<double> gradient_buckets(const ParallelBuild& b, int s);

/// Per replica and iteration: what each virtual stage's micro-batches wait for.
struct ReplicaFlow {
  ReplicaFlow(int virtual_stages, int microbatches, int tensor);
  /// [vs][i][t]: the transfer that brought micro-batch i's input (forward) / gradient (backward), -1 before.
  std::vector<std::vector<std::vector<int>>> fwd_in, bwd_in;
  std::vector<std::vector<bool>> fwd_done;  ///< [vs][i]
};

/// Whether operation `op` of GPU stage `s` can run now (its input or gradient has been sent).
bool stage_op_ready(const ParallelBuild& b, int s, const ChunkOp& op, const ReplicaFlow& flow);

/// Adds micro-batch op.micro's forward or backward through virtual stage op.chunk * P + s on replica d:
/// the stage's pieces, its tensor-parallel collectives, and the boundary send to the next stage.
void add_stage_op(ParallelBuild& b, int d, int s, const ChunkOp& op, ReplicaFlow& flow);

/// Adds iteration `it`'s end: data-parallel gradients, the tied embedding's gradient, the optimizer
/// step (and the distributed optimizer's parameter gather); appends the iteration's end marker.
void add_step_end(ParallelBuild& b, int it);

/// The plan's memory per GPU, its notes, the step-time jitter and, folded, the representatives.
void finish_parallel_plan(ParallelBuild& b, const LoaderSpec& loader);

}  // namespace dtsim
