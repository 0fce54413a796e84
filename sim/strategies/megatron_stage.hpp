// What one pipeline stage runs per micro-batch on one tensor-parallel rank, cut into the pieces that
// Megatron-LM's tensor parallelism gives it: each piece's compute, then the collective Megatron
// issues there among the stage's tensor-parallel ranks, on the critical path of that rank.
//
// Per transformer layer (megatron/core/tensor_parallel/mappings.py, layers.py; Shoeybi et al. 2019,
// figure 3): the column-parallel linears (QKV, MLP up) take their input through `f` (identity
// forward, AllReduce of the input gradient backward) and the row-parallel linears (attention
// output, MLP down) end in `g` (AllReduce of the output forward, identity backward): two
// AllReduces forward and two backward. With sequence parallelism (Korthikanti et al. 2022, section
// 4.2.2) each becomes a ReduceScatter and an AllGather of the same tensor.
// Around the transformer layers: the vocabulary-parallel embedding AllReduces its output forward
// (VocabParallelEmbedding); the output layer is column-parallel (AllReduce of its input gradient
// backward) and the vocabulary-parallel cross entropy AllReduces three fp32 values per token
// forward: the logits' maximum, the target's logit and the sum of exponentials
// (megatron/core/tensor_parallel/cross_entropy.py).
// Megatron overlaps the backward collectives of a column-parallel linear with its GEMMs
// (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication.backward,
// async_op=True, with CUDA_DEVICE_MAX_CONNECTIONS=1 so that the collective is queued first): without
// sequence parallelism the input gradient's AllReduce runs beside the weight-gradient GEMM; with it,
// the AllGather of the layer input (kept sharded in forward) runs beside the input-gradient GEMM and
// the ReduceScatter of the input gradient beside the weight-gradient GEMM. What stays exposed is
// the row-parallel linear's backward: nothing without sequence parallelism (`g` is the identity
// backward), the AllGather of its output gradient with it. PyTorch's own tensor parallelism
// (torchtitan) waits for each collective: `overlap_backward` false.
// Activation recomputation (Korthikanti et al. 2022, section 5): "full" re-runs each transformer
// layer's forward, its collectives included, before its backward; "selective" re-runs only the
// core attention (QK^T, softmax, dropout, x V), which holds no collective.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/util/json_reader.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

struct TpCollective {
  CollectiveOp op = CollectiveOp::AllReduce;
  double bytes = 0;  ///< as nccl-tests counts it (AllReduce: the buffer; ReduceScatter/AllGather: the whole tensor)
};

/// A collective issued asynchronously in backward and waited for after the GEMM it runs beside.
struct TpBeside {
  TpCollective collective;
  double compute_s = 0;  ///< the GEMM's seconds (part of the piece's bwd_s)
};

/// A piece's backward runs: recompute_s (and after_fwd again, when recompute_collectives), then
/// before_bwd, then bwd_main_s(), then each of beside in order (the collective beside its GEMM,
/// both waited for), then bwd_after_s, then after_bwd. The backward after the overlapped GEMMs of
/// every piece but the first is counted in the main part of the piece before it (run next).
struct StagePiece {
  std::string name;                 ///< its first layer ("transformer.h.3.ln_1"); empty for a whole stage
  double fwd_s = 0, bwd_s = 0;      ///< one micro-batch on one tensor rank
  double recompute_s = 0;           ///< forward re-run before its backward
  bool recompute_collectives = false;  ///< the re-run issues after_fwd again (full recomputation)
  std::vector<TpCollective> after_fwd;
  std::vector<TpCollective> before_bwd;  ///< exposed, before the backward's GEMMs
  std::vector<TpBeside> beside;          ///< overlapped with the column-parallel linear's GEMMs
  double bwd_after_s = 0;                ///< backward after them (the layers before that linear)
  std::vector<TpCollective> after_bwd;   ///< exposed, after the backward
  /// Of fwd_s, bwd_s and recompute_s: the copies around its AllGathers and ReduceScatters
  /// (TensorParallelOptions::chunk_cat_s_per_byte).
  double chunk_cat_s = 0;

  /// Backward before the overlapped GEMMs.
  double bwd_main_s() const;
};

/// Bytes and calls of each kind of tensor-parallel collective that `pieces` issue for one
/// micro-batch, forward and backward (the re-run's too, under full recomputation), added to
/// `per_op`: the per-step traffic the report lists.
void add_tensor_parallel_traffic(const std::vector<StagePiece>& pieces, std::map<CollectiveOp, std::pair<double, int>>& per_op);

struct TensorParallelOptions {
  int tensor = 1;
  bool sequence_parallel = false;
  Recomputation recompute;
  bool overlap_backward = false;  ///< Megatron's asynchronous backward collectives (above)
  /// The loss over each rank's share of the vocabulary (the cross entropy's three per-token
  /// AllReduces); false: the logits AllGathered whole to every rank instead (forward only: the
  /// gradient of a replicated tensor is sliced back to the rank's share without a collective).
  bool loss_parallel = true;
  /// Each column-parallel linear gathers its own input (a ColwiseParallel(input_layouts=Shard(1)) per
  /// projection, as KempnerForge's TP plan writes it: q, k and v each AllGather the same activation,
  /// and each ReduceScatters its input gradient in backward), instead of one gather per block input
  /// (Megatron-LM; torchtitan's PrepareModuleInput).
  bool gather_per_linear = false;
  /// PyTorch's tensor parallelism (DTensor) shards [batch, sequence, hidden] activations on the
  /// sequence (Shard(1)) and the logits on the vocabulary, but NCCL gathers and scatters along dim 0:
  /// PyTorch's functional collectives copy the whole tensor once around each such AllGather and
  /// ReduceScatter, on the compute stream (torch/distributed/_functional_collectives.py:
  /// all_gather_tensor's `torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim)` after the
  /// gather, reduce_scatter_tensor's `torch.cat(torch.chunk(self, group_size, dim=scatter_dim))`
  /// before the scatter), forward and backward alike (each redistribution's backward is the other).
  /// Seconds per byte of the whole tensor (read and written once); 0: no copies (Megatron-LM keeps
  /// [sequence, batch, hidden] and gathers and scatters along dim 0).
  double chunk_cat_s_per_byte = 0;
};

/// What stage_pieces reads of the whole model, per layer, found once (a model has up to 100,000 layers
/// and FSDP cuts it into a piece list per unit).
struct StageMarks {
  std::vector<bool> in_block;     ///< in a transformer layer
  std::vector<int> block;         ///< which transformer layer (transformer_layers' index), -1 outside
  /// An even matmul of its transformer layer: torchtitan's op-level checkpointing recomputes every
  /// second one (the elementwise ops it also recomputes cost no FLOPs here: saved_tensors.cpp's op_saved).
  std::vector<bool> even_matmul;
  std::vector<bool> row_parallel;  ///< a row-parallel linear (row_parallel_linears)
  std::size_t first_block = 0;    ///< the first transformer layer's first row (the layer count without any)
  bool embedding = false;          ///< the model starts with (word) embeddings, Megatron's vocabulary-parallel ones
  int head = -1;                   ///< output_layer
  /// The column-parallel linears after each layer up to the next row-parallel one (at least 1): the
  /// gathers of its output under gather_per_linear.
  std::vector<int> linears_after;
};
StageMarks stage_marks(const Model& model);

/// The pieces of layers [range.first, range.last) for one micro-batch of `micro` samples, from the
/// per-layer times of one micro-batch on a whole GPU (`times`, divided by the tensor degree here).
/// With one tensor rank the stage is one piece without collectives.
std::vector<StagePiece> stage_pieces(const Model& model, const LayerTimes& times, StageRange range, double micro,
                                     double activation_bytes, const TensorParallelOptions& tp);
/// The same with the model's marks found once (a builder cutting many ranges).
std::vector<StagePiece> stage_pieces(const Model& model, const StageMarks& marks, const LayerTimes& times, StageRange range,
                                     double micro, double activation_bytes, const TensorParallelOptions& tp);

/// `times` (one GPU, one micro-batch) with each layer's recomputation under `recompute` added to
/// its backward, by stage_pieces' rules on one tensor rank (full: every transformer-layer row;
/// selective: the attention cores; selective_op: every second matmul of a transformer layer): a
/// data-parallel replica's compute under training.activation_checkpointing (torch.utils.checkpoint
/// re-runs the forward in the backward). One pass over the layers. Unchanged with None; under Full
/// with `every` n, every n-th transformer layer only.
LayerTimes with_recomputation(const Model& model, LayerTimes times, const Recomputation& recompute);

/// The report's note on training.activation_checkpointing (not None); `every` > 1: selective_layer.
std::string checkpointing_note(const Recomputation& recompute);

/// Megatron splits attention by heads, and GQA's key/value heads (query groups) too: each tensor
/// rank holds whole ones (megatron/core/transformer/attention.py divides both by the TP size; so
/// does torchtitan's TP plan, n_heads // tp_size). An InputError at `where` when `tensor` does not
/// divide the model's heads or kv_heads (arch), or when `tensor` > 1 for a model without transformer
/// layers (transformer_layers: a CNN has nothing tensor parallelism splits).
void check_heads_divide(const Model& model, int tensor, const JsonReader& where);

/// Per layer: true for a row-parallel linear of a transformer layer (the first linear after the
/// core attention, and the layer's last linear: attention output and MLP down), whose output
/// Megatron reduces across the tensor ranks (`g`); every other linear is column-parallel.
std::vector<bool> row_parallel_linears(const Model& model);

/// The layer of the vocabulary projection after the last transformer layer (Megatron's output
/// layer), or -1: the linear whose output per sample is vocab x seq_len (arch), else the one with
/// the most forward FLOPs there.
int output_layer(const Model& model);

/// True when the output layer holds no weight matrix of its own (a bias at most): its weights are the
/// word embedding's (GPT-2's lm_head, BERT's MLM decoder, Megatron's share_embeddings_and_output_weights).
bool tied_embeddings(const Model& model);

}  // namespace dtsim
