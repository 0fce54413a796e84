// What autograd keeps for backward, layer by layer, as PyTorch's derivatives.yaml and the modules'
// forward code make it keep it: per layer kind and per operation after it (Layer::then), with the
// dtype each saved tensor has under fp32, AMP (autocast's op lists) and pure fp16/bf16 training.
// The result is per sample and per GPU (tensor parallelism divides what it shards), for one pass
// of layers [first, last); memory_timeline.hpp walks it over the iteration.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim {

struct AutogradSettings {
  Precision precision = Precision::Fp32;
  AttentionKernel attention = AttentionKernel::Sdpa;
  /// Megatron-LM's fused kernels (bias-GeLU, bias-dropout-add, scaled masked softmax): a GeLU keeps
  /// its input only (megatron/core/fusions/fused_bias_gelu.py), not Hugging Face's gelu_new chain.
  /// Its bias-SwiGLU too (megatron/core/fusions/fused_bias_swiglu.py SwiGLUFunction.forward:
  /// ctx.save_for_backward(input), the fc1 output; swiglu_back recomputes silu): silu(gate) x up keeps
  /// gate and up, not silu's output, which eager PyTorch's F.silu(x) * y keeps for mul's backward.
  bool fused_elementwise = false;
  /// Megatron-LM's vocabulary-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py
  /// _VocabParallelCrossEntropy): it takes the logits in fp32 and works in place (exp_logits over that
  /// copy, divided in place to the softmax it saves; backward turns the softmax into the gradient in
  /// place), so its backward holds only the gradient cast back to the logits' dtype beside what it saved.
  bool megatron_loss = false;
  /// Selective recomputation (Korthikanti et al. 2022, section 4.2): the attention core keeps nothing
  /// of its own (its inputs stay saved by it), it is recomputed in backward.
  bool selective_recompute = false;
  int tensor_parallel = 1;
  /// Sequence parallelism shards what tensor parallelism replicates (Korthikanti et al. 2022, section 4.2.2).
  bool sequence_parallel = false;
  /// Bytes per logit of the cross entropy's own tensors: 4 where the logits are taken in fp32 (Hugging
  /// Face, Megatron-LM, torchtitan's logits.float()), 2 where F.cross_entropy runs on a half-precision
  /// model's output as it is (KempnerForge's loss; training.loss_dtype).
  double loss_bytes = 4;
  /// The loss over each tensor rank's share of the vocabulary (Megatron's vocabulary-parallel cross
  /// entropy, torchtitan's loss parallel); false: the logits are gathered whole to every tensor rank
  /// first (a ColwiseParallel head with output_layouts=Replicate()) and the loss runs on all of them.
  bool loss_parallel = true;
  /// The loss and its gradient in one fused kernel (training.loss_kernel "fused"): flash-attn's
  /// CrossEntropyLoss (flash_attn/losses/cross_entropy.py; llm-foundry's default loss_fn
  /// "fused_crossentropy") keeps its input logits and a per-row logsumexp, no log_softmax output, and
  /// its backward writes one gradient of the logits in their dtype (inplace_backward false, its default).
  bool fused_loss = false;
  /// Tensor parallelism through DTensor (torchtitan's and KempnerForge's ColwiseParallel /
  /// RowwiseParallel plans over FSDP2), not Megatron-LM's layers. Under sequence parallelism a
  /// column-parallel linear's input is redistributed from Shard(1) to Replicate() before its matmul
  /// (torch/distributed/tensor/parallel/style.py, _prepare_input_fn), and aten's mm keeps that whole
  /// gathered tensor for backward, where Megatron's linear keeps its shard and gathers it again
  /// (Korthikanti et al. 2022, section 4.2.2). With loss parallelism the cross entropy is DTensor's
  /// decomposition (torch/distributed/tensor/parallel/loss.py), not one kernel.
  bool dtensor_tp = false;
  /// With dtensor_tp: each column-parallel linear gathers its own input (a ColwiseParallel with
  /// input_layouts=Shard(1) per projection) instead of one gather per module serving them all.
  bool gather_per_linear = false;
};

/// A tensor kept for backward: bytes per sample on one GPU.
struct SavedTensor {
  double bytes = 0;
  std::size_t made = 0;        ///< layer (index into the model) whose forward makes it
  std::size_t freed = 0;       ///< layer whose backward releases it (the first one that saves it)
  /// Made by an op that torchtitan's op-level selective checkpointing saves: a matmul (all but every
  /// second one of a transformer layer) or the SDPA kernel. Everything else it recomputes.
  bool op_saved = false;
  /// The pass's input received from the previous pipeline stage (or model chunk): the schedule keeps
  /// it until its backward (megatron/core/pipeline_parallel/schedules.py
  /// forward_backward_pipelining_without_interleaving: input_tensors.append(input_tensor); the
  /// interleaved schedule's input_tensors[model_chunk_id]), and a recomputed layer keeps its input
  /// (megatron/core/tensor_parallel/random.py CheckpointFunction.forward: ctx.save_for_backward(*args)),
  /// so full recomputation never drops it.
  bool received = false;
};

/// One layer of the pass, per sample on one GPU.
struct LayerPass {
  double fwd_transient = 0;    ///< bytes alive during its forward that nothing saves (input, output, temporaries)
  double bwd_transient = 0;    ///< gradients alive during its backward (of its output, its input, its temporaries)
  double weight_casts = 0;     ///< AMP: half copies of its weights (not per sample), saved until its backward
  double param_elems = 0;      ///< its parameters (gradients are produced in its backward)
};

struct ActivationPass {
  std::size_t first = 0, last = 0;
  std::vector<SavedTensor> saved;
  std::vector<LayerPass> layers;     ///< [i - first]
  /// The loss (cross-entropy over the last layer's output and any output nothing else read), when the
  /// pass ends the model: what its forward keeps, and the transients of its forward and backward.
  double loss_saved = 0, loss_fwd_transient = 0, loss_bwd_transient = 0;
  /// The logits the loss reads as the model returns them (gathered whole to each tensor rank without
  /// loss parallelism): what a training loop that holds its output keeps (training.hold_logits).
  double loss_logits = 0;
  /// Of loss_saved, the logits themselves (a fused loss keeping its input as it is): held by the loop
  /// too, the same bytes, counted once.
  double loss_saved_logits = 0;
  bool has_loss = false;

  /// Bytes per sample that the whole pass keeps at the end of its forward (the loss's included).
  double saved_total() const;
};

/// Autograd's saved tensors of layers [first, last) (the input of `first` comes from outside: the
/// model input, or the previous stage's activation). `with_loss`: the pass ends in the loss.
ActivationPass activation_pass(const Model& model, std::size_t first, std::size_t last, const AutogradSettings& s,
                               bool with_loss);

}  // namespace dtsim
