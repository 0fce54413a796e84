// Memory of one GPU over one training iteration: the weights, optimizer state and workspaces that
// stay, then forward (autograd's saved tensors allocated layer by layer, saved_tensors.hpp), the
// loss, backward (saved tensors released as each layer's backward runs, gradients allocated as they
// are produced), and the optimizer step (its temporaries). The peak of that curve is what
// torch.cuda.max_memory_allocated reports; the caching allocator's rounding gives the reserved
// bytes, and the CUDA context what nvidia-smi shows on top.
//
// Any strategy calls gpu_memory() once per distinct stage (not per GPU): a walk is O(layers).
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/strategies/saved_tensors.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim {

/// What a GPU holds of its layers' parameters, per kind (sharded data parallel divides each
/// differently: ZeRO-1 the optimizer state, ZeRO-2 also the gradients, ZeRO-3 / FSDP the weights).
/// Tensor parallelism's 1/t is part of these shares too.
struct MemoryShares {
  double weights = 1;
  double grads = 1;
  double optimizer = 1;
};

/// The scenario's settings that memory depends on, read once.
struct MemoryContext {
  MemoryRules rules;
  AutogradSettings autograd;
  Recomputation recomputation;
  double workspace_bytes = 0;     ///< cuBLAS + cuBLASLt workspaces (per GPU generation)
  double cuda_context_bytes = 0;  ///< the CUDA context with the training kernels loaded
  /// training.hold_logits: the loop's variable keeps the last forward's logits through backward, the
  /// optimizer step and the next forward (until that forward's output replaces them), so in steady
  /// state one micro-batch's logits are alive at every moment of the iteration.
  bool hold_logits = false;
};

/// `tensor_parallel` / `sequence_parallel`: Megatron's degrees (hybrid strategy); `megatron`: its
/// fused kernels (and its selective recomputation) instead of PyTorch's eager modules.
MemoryContext memory_context(const Scenario& scenario, const GpuSpec& gpu, int tensor_parallel = 1,
                             bool sequence_parallel = false, bool megatron = false);
/// The same without a scenario: `optimizer` one of optimizer_names() (memory.hpp).
MemoryContext memory_context(Precision precision, const std::string& optimizer, AttentionKernel attention,
                             const Recomputation& recomputation, const GpuSpec& gpu, int tensor_parallel = 1,
                             bool sequence_parallel = false, bool megatron = false);

/// One GPU's part of the model and its work in an iteration.
struct StageMemoryRequest {
  std::size_t first = 0, last = 0;   ///< its layers [first, last) (a pipeline stage, or the whole model)
  MemoryShares share;
  /// Parameters it holds beyond its layers' (Megatron's last pipeline stage's copy of a tied word
  /// embedding, its output layer's weight): weights, gradients and optimizer states at `share`.
  double extra_params = 0;
  double micro_batch = 1;            ///< samples per micro-batch (per forward)
  double micro_batches_held = 1;     ///< micro-batches whose activations are alive at once (1F1B: min(p - s, m) on stage s)
  bool grads_persist = false;        ///< gradients live from the iteration's start (accumulation over micro-batches)
  /// Without grads_persist: >= 0 allocates the gradients whole (all of them, at their share) once
  /// backward has produced the gradients of more than this many parameters (DeepSpeed ZeRO-2's flat
  /// partition, made at its first bucket reduction); < 0 allocates them layer by layer as produced.
  double grads_whole_after_params = -1;
  /// The optimizer step's gradient copies (DeepSpeed ZeRO: the step flattens the partition's
  /// half-precision gradients and casts them to the fp32 copy the optimizer reads): `step_cast_bytes`
  /// alive only while cast, `step_grad_bytes` through the step.
  double step_cast_bytes = 0;
  double step_grad_bytes = 0;
  /// > 0: the most parameters the optimizer steps at once (DeepSpeed ZeRO-3's sub-group: stage3.py
  /// step() calls _optimizer_step(sub_group_id) per sub-group), which bounds the foreach Adam's
  /// temporary; <= 0: the whole share of the parameters in one step.
  double step_group_elems = 0;
  /// >= 0: the share of the gradients still alive at the optimizer step, in place of `share.grads`
  /// (DeepSpeed ZeRO-1 reduces the full gradients but keeps only its partition's to the step);
  /// < 0: the gradients backward left.
  double step_grads_share = -1;
  double extra_bytes = 0;            ///< transient bytes alive through forward and backward (e.g. gathered parameters)
  /// Gradients outside `share` alive from the micro-step's start to the end of its backward, counted
  /// as gradients (FSDP's unsharded gradients accumulated under no_sync, freed once the last
  /// micro-step has reduced them: not at the optimizer step).
  double held_grads_bytes = 0;
  /// Weights outside `share` alive at every moment, counted as weights (DeepSpeed ZeRO-3's persistent
  /// parameters, whole on every GPU beside their partition).
  double held_weights_bytes = 0;
  /// Transient bytes beside extra_bytes that change over the iteration, counted as workspace (FSDP's
  /// gathered units, its unsharded gradients and CPU offload's shard copies: sharded_memory.cpp).
  /// forward[k] / backward[k]: at the forward / backward of layer first + k (a missing entry is 0);
  /// at the loss's forward and backward; at the optimizer step.
  struct PhasedBytes {
    std::vector<double> forward, backward;
    double loss_forward = 0, loss_backward = 0, step = 0;
  };
  PhasedBytes phased_extra;
  double grad_buckets_bytes = 0;     ///< DDP's flat bucket copies of the gradients (allocated once, kept)
  bool buckets_in_backward_only = false;  ///< the buckets exist from backward's start to its end (DeepSpeed's IPG buffers)
  double io_bytes = 0;               ///< the input batch and other buffers outside autograd
};

/// The peak of allocated bytes over one iteration, what holds it (GpuMemory's terms, summing to it),
/// when it happens, the reserved bytes and the device memory in use.
/// `curve`, when given, receives every moment the walk looks at, in order (forward per layer, the
/// loss, backward per layer, the optimizer step: its gradient cast first when there is one).
GpuMemory gpu_memory(const Model& model, const MemoryContext& ctx, const StageMemoryRequest& req,
                     std::vector<MemoryPoint>* curve = nullptr);

/// Whether gpu_memory's peak is the optimizer step (GpuMemory::peak_at as it names that moment).
bool peak_at_optimizer_step(const GpuMemory& m);

/// The caching allocator's segment for one allocation of `bytes` (c10/cuda/CUDACachingAllocator.cpp:
/// 512-byte rounding; requests up to 1 MiB from 2 MiB small-pool segments, up to 10 MiB from 20 MiB
/// segments, larger ones rounded up to 2 MiB).
double allocator_block_bytes(double bytes);

}  // namespace dtsim
