#include "sim/strategies/memory_timeline.hpp"

#include "sim/strategies/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace dtsim {

namespace {

constexpr const char* kOptimizerStep = "the optimizer step";  // GpuMemory::peak_at there

constexpr double kMiBytes = 1024.0 * 1024.0;

/// cuBLAS's workspace per handle and stream (aten/src/ATen/cuda/CublasHandlePool.cpp,
/// getChosenWorkspaceSize: CUBLAS_WORKSPACE_CONFIG's default ":4096:8" = 32 MiB on sm90,
/// ":4096:2:16:8" = 8 MiB + 128 KiB before), allocated through the caching allocator; cuBLASLt has a
/// workspace of its own of the same default size (getCUDABlasLtWorkspaceSize). Check against the
/// committed measurement (calibration/measured/h200-1gpu-2026-11-27, memory_peaks.json): before
/// forward, an H200 process holds 66-72 MiB besides its weights, optimizer state and batch.
double cublas_workspaces(int compute_capability)
{
  const double one = compute_capability >= 90 ? 4096.0 * 8 * 1024 : 4096.0 * 2 * 1024 + 16.0 * 8 * 1024;
  return 2 * one;
}

/// The CUDA context once the training kernels are loaded (CUDA's lazy module loading adds them at
/// first use), as nvidia-smi counts the process beyond the allocator's reserved bytes: 741-766 MiB,
/// median 755, over the 14 configurations of calibration/measured/h200-1gpu-2026-11-27 (driver 580,
/// CUDA 13.0, PyTorch 2.11; 612 MiB right after initialisation). Only this H200 figure is measured:
/// other generations take it too.
constexpr double kCudaContextBytes = 755 * kMiBytes;

struct Peak {
  double bytes = -1;
  GpuMemory at;
  int phase = 0;          // 0 forward, 1 loss forward, 2 loss backward, 3 backward, 4 optimizer step
  std::size_t layer = 0;
};

}  // namespace

bool peak_at_optimizer_step(const GpuMemory& m)
{
  return m.peak_at == kOptimizerStep;
}

double allocator_block_bytes(double bytes)
{
  // CUDACachingAllocator.cpp: kMinBlockSize 512 (round_size), kSmallSize 1 MiB (small pool of
  // kSmallBuffer 2 MiB segments), kMinLargeAlloc 10 MiB (below it kLargeBuffer 20 MiB segments,
  // split between requests), kRoundLarge 2 MiB (larger requests get a segment of their own).
  if (bytes <= 0)
    return 0;
  const double rounded = std::ceil(bytes / 512) * 512;
  if (rounded < 10 * kMiBytes)
    return rounded;  // carved out of a shared segment
  return std::ceil(rounded / (2 * kMiBytes)) * 2 * kMiBytes;
}

MemoryContext memory_context(Precision precision, const std::string& optimizer, AttentionKernel attention,
                             const Recomputation& recomputation, const GpuSpec& gpu, int tensor_parallel,
                             bool sequence_parallel, bool megatron)
{
  MemoryContext c;
  c.rules = memory_rules(precision, optimizer);
  c.recomputation = recomputation;
  c.autograd.precision = precision;
  c.autograd.attention = attention;
  c.autograd.fused_elementwise = megatron;
  c.autograd.megatron_loss = megatron;
  c.autograd.selective_recompute = recomputation.policy == ActivationCheckpointing::Selective;
  c.autograd.tensor_parallel = std::max(1, tensor_parallel);
  c.autograd.sequence_parallel = sequence_parallel && tensor_parallel > 1;
  c.workspace_bytes = cublas_workspaces(gpu.compute_capability);
  c.cuda_context_bytes = kCudaContextBytes;
  if (!megatron)
    return c;
  // Megatron-LM's Adam is a fused kernel (megatron/core/optimizer/__init__.py imports Transformer
  // Engine's or Apex's FusedAdam): no step temporaries unless a variant is named.
  if (optimizer.find("-foreach") == std::string::npos && optimizer.find("-for-loop") == std::string::npos)
    c.rules.step = OptimizerStep::Fused;
  // Its half-precision training keeps the model's weights in half (2 B) and the fp32 master weights
  // with the optimizer, which the distributed optimizer shards with the Adam moments. The gradient
  // buffer is fp32 under bf16 only (megatron/training/arguments.py: validate_args forces
  // accumulate_allreduce_grads_in_fp32 `if args.bf16`; param_and_grad_buffer.py
  // group_params_for_buffers: grad_dtype torch.float if grad_reduce_in_fp32, else param.dtype): bf16
  // 18 B per parameter, 6 + 12/dp distributed (theoretical_memory_usage.py); fp16 16 B, and the step's
  // fp32 copy of the gradients it reads (parallel_memory.cpp).
  if (precision == Precision::Bf16 || precision == Precision::Fp16) {
    c.rules.stored_weight_bytes = 2;
    c.rules.grad_bytes = precision == Precision::Bf16 ? 4 : 2;
    c.rules.optimizer_bytes += 4;
  }
  return c;
}

MemoryContext memory_context(const Scenario& scenario, const GpuSpec& gpu, int tensor_parallel, bool sequence_parallel,
                             bool megatron)
{
  const TrainingSpec& t = scenario.training;
  MemoryContext c = memory_context(t.precision, t.optimizer, t.attention, t.recomputation, gpu, tensor_parallel,
                                   sequence_parallel, megatron);
  c.autograd.loss_bytes = t.loss_bytes;
  c.autograd.fused_loss = t.loss_kernel == LossKernel::Fused;
  c.hold_logits = t.hold_logits;
  return c;
}

namespace {

std::string moment(const Model& model, int phase, std::size_t layer, double loss_bytes)
{
  const char* dtype = loss_bytes == 4 ? "fp32" : "half-precision";
  switch (phase) {
    case 0: return "forward of " + model.layers[layer].name;
    case 1: return fmt::format("the loss's forward ({} logits)", dtype);
    case 2: return fmt::format("the loss's backward ({} logit gradients)", dtype);
    case 3: return "backward of " + model.layers[layer].name;
    default: return kOptimizerStep;
  }
}

}  // namespace

GpuMemory gpu_memory(const Model& model, const MemoryContext& ctx, const StageMemoryRequest& req,
                     std::vector<MemoryPoint>* curve)
{
  const MemoryRules& r = ctx.rules;
  const bool amp = ctx.autograd.precision == Precision::Amp;
  const bool with_loss = req.last == model.layers.size();
  const ActivationPass pass = activation_pass(model, req.first, req.last, ctx.autograd, with_loss);
  const std::size_t n = req.last - req.first;
  const double micro = req.micro_batch;

  // Full recomputation (Korthikanti et al. 2022, section 5; torch.utils.checkpoint): a transformer
  // layer keeps only its input through forward; its own saved tensors exist again during its
  // backward only, recomputed then. torchtitan's op-level selective checkpointing does the same
  // for what its save list does not keep (SavedTensor::op_saved). The input a stage receives stays
  // (SavedTensor::received).
  std::vector<int> block_of(n, -1);
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  const bool op_level = ctx.recomputation.policy == ActivationCheckpointing::SelectiveOp;
  const auto all_blocks = transformer_layers(model);
  if (ctx.recomputation.policy == ActivationCheckpointing::Full || op_level)
    for (std::size_t k = 0; k < all_blocks.size(); ++k)
      if (const auto& b = all_blocks[k];
          b.first >= req.first && b.last <= req.last && (op_level || ctx.recomputation.recomputes_whole(k))) {
        for (std::size_t i = b.first; i < b.last; ++i)
          block_of[i - req.first] = static_cast<int>(blocks.size());
        blocks.emplace_back(b.first, b.last);
      }
  const auto recomputed = [&](const SavedTensor& t) {
    const int b = block_of[t.made - req.first];
    return b >= 0 && block_of[t.freed - req.first] == b && !(op_level && t.op_saved) && !t.received;
  };

  std::vector<double> made(n, 0.0), freed(n, 0.0), refreed(n, 0.0), block_saved(blocks.size(), 0.0);
  double kept_per_micro = pass.loss_saved;  // what one micro-batch keeps through forward
  for (const auto& t : pass.saved) {
    if (recomputed(t)) {
      block_saved[static_cast<std::size_t>(block_of[t.made - req.first])] += t.bytes;
      refreed[t.freed - req.first] += t.bytes;
      continue;
    }
    made[t.made - req.first] += t.bytes;
    freed[t.freed - req.first] += t.bytes;
    kept_per_micro += t.bytes;
  }

  const double params = params_in(model, req.first, req.last) + req.extra_params;
  GpuMemory base;
  base.params = params * r.stored_weight_bytes * req.share.weights + req.held_weights_bytes;
  base.optimizer = params * r.optimizer_bytes * req.share.optimizer;
  base.io = req.io_bytes;
  // Logits held by the training loop (MemoryContext::hold_logits): the previous micro-step's through
  // this one's forward, the new ones from the head's output on (at that moment both: the loss's
  // forward transient counts the new ones), an "input/output" buffer outside autograd.
  if (ctx.hold_logits && pass.has_loss)
    base.io += pass.loss_logits * micro;
  base.workspace = ctx.workspace_bytes + req.extra_bytes;
  const double fixed_grads = req.buckets_in_backward_only ? 0 : req.grad_buckets_bytes;
  base.grads = fixed_grads + req.held_grads_bytes;
  const double all_grads = params * r.grad_bytes * req.share.grads;
  if (req.grads_persist)
    base.grads += all_grads;
  // Earlier micro-batches' activations, alive while this one runs (pipeline schedules).
  base.activations = std::max(0.0, req.micro_batches_held - 1) * kept_per_micro * micro;

  Peak peak;
  const auto consider = [&](const GpuMemory& m, int phase, std::size_t layer) {
    if (curve)
      curve->push_back({moment(model, phase, layer, ctx.autograd.loss_bytes), m.params, m.grads, m.optimizer, m.activations, m.io + m.workspace});
    if (m.total() > peak.bytes) {
      peak.bytes = m.total();
      peak.at = m;
      peak.phase = phase;
      peak.layer = layer;
    }
  };

  GpuMemory cur = base;
  const auto phased = [&](const std::vector<double>& v, std::size_t k) { return k < v.size() ? v[k] : 0.0; };
  const double backward_buckets = req.buckets_in_backward_only ? req.grad_buckets_bytes : 0;
  for (std::size_t k = 0; k < n; ++k) {
    const LayerPass& l = pass.layers[k];
    cur.activations += made[k] * micro;
    cur.params += amp ? l.weight_casts * req.share.weights : 0;
    GpuMemory now = cur;
    now.activations += l.fwd_transient * micro;
    now.workspace += phased(req.phased_extra.forward, k);
    consider(now, 0, req.first + k);
  }
  if (pass.has_loss) {
    GpuMemory now = cur;
    now.workspace += req.phased_extra.loss_forward;
    now.activations += pass.loss_fwd_transient * micro;
    consider(now, 1, req.last - 1);
    cur.activations += pass.loss_saved * micro;
    cur.grads += backward_buckets;
    now = cur;
    now.workspace += req.phased_extra.loss_backward;
    if (ctx.hold_logits)  // the logits a fused loss keeps are the ones the loop holds
      now.io -= pass.loss_saved_logits * micro;
    now.activations += pass.loss_bwd_transient * micro;
    consider(now, 2, req.last - 1);
    cur.activations -= pass.loss_saved * micro;
  }
  if (!pass.has_loss)
    cur.grads += backward_buckets;
  const bool grads_whole = !req.grads_persist && req.grads_whole_after_params >= 0;
  double produced = 0;  // parameters whose gradients backward has produced so far
  bool grads_allocated = false;
  for (std::size_t k = n; k-- > 0;) {
    const LayerPass& l = pass.layers[k];
    const int b = block_of[k];
    if (b >= 0 && req.first + k + 1 == blocks[static_cast<std::size_t>(b)].second)
      cur.activations += block_saved[static_cast<std::size_t>(b)] * micro;  // recomputed forward of the layer
    if (grads_whole && !grads_allocated && produced > req.grads_whole_after_params) {
      cur.grads += all_grads;
      grads_allocated = true;
    }
    produced += l.param_elems;
    const double grads = req.grads_persist || grads_whole ? 0 : l.param_elems * r.grad_bytes * req.share.grads;
    GpuMemory now = cur;
    now.grads += grads;
    now.workspace += phased(req.phased_extra.backward, k);
    // The layer's weight gradients come out in the compute dtype and are cast to the fp32 .grad
    // under AMP (autocast's cast is an autograd node): both exist for a moment.
    now.activations += l.bwd_transient * micro + (amp ? l.param_elems * 2 * req.share.grads : 0);
    consider(now, 3, req.first + k);
    cur.grads += grads;
    cur.activations -= (freed[k] + refreed[k]) * micro;
    cur.params -= amp ? l.weight_casts * req.share.weights : 0;
  }
  // The optimizer step (torch/optim/adam.py, adamw.py, sgd.py): the foreach Adam makes one list of
  // temporaries the size of the parameters it steps (torch._foreach_sqrt(exp_avg_sqs), then divided
  // and added in place); the per-tensor loop two temporaries of the largest tensor (exp_avg_sq.sqrt() /
  // bias_correction2_sqrt); the fused kernel none. Both temporaries have the states' dtype
  // (MemoryRules::state_element_bytes: fp32, or half precision where the states are). A step over
  // sub-groups (DeepSpeed ZeRO-3, step_group_elems) makes the foreach list of one sub-group at a
  // time. SGD with momentum updates in place (foreach_mul_, foreach_add_). Measured: GPT-2 AdamW
  // foreach 1.00 x the fp32 weights above the state before the step, per-tensor 2 x wte
  // (calibration/measured/h200-1gpu-2026-11-27).
  {
    GpuMemory now = cur;
    now.activations = 0;  // every micro-batch's backward has run
    now.workspace += req.phased_extra.step;
    now.grads = fixed_grads + (req.step_grads_share >= 0 ? params * r.grad_bytes * req.step_grads_share : all_grads);
    if (req.step_cast_bytes > 0) {
      GpuMemory cast = now;
      cast.grads += req.step_cast_bytes + req.step_grad_bytes;
      consider(cast, 4, req.last - 1);
    }
    now.grads += req.step_grad_bytes;
    const double largest = largest_param_tensor(model, req.first, req.last);
    const double stepped = params * req.share.optimizer;  // the parameters the step updates
    const double at_once = req.step_group_elems > 0 ? std::min(stepped, req.step_group_elems) : stepped;
    if (r.adam && r.step == OptimizerStep::Foreach)
      now.optimizer += at_once * r.state_element_bytes;
    else if (r.adam && r.step == OptimizerStep::ForLoop)
      now.optimizer += 2 * largest * r.state_element_bytes * req.share.optimizer;
    consider(now, 4, req.last - 1);
  }

  GpuMemory m = peak.at;
  m.peak_at = moment(model, peak.phase, peak.layer, ctx.autograd.loss_bytes);
  const std::pair<const char*, double> terms[] = {{"weights", m.params},          {"gradients", m.grads},
                                                  {"optimizer state", m.optimizer}, {"activations", m.activations},
                                                  {"input/output", m.io},         {"workspace", m.workspace}};
  double top = -1;
  for (const auto& t : terms)
    if (t.second > top) {
      top = t.second;
      m.dominant = t.first;
    }

  // Reserved: every tensor alive at the peak occupies its allocator block; the saved tensors of the
  // micro-batches alive and the per-tensor parameters, gradients and states.
  double rounding = 0;
  const auto add_block = [&rounding](double bytes, double count) {
    rounding += (allocator_block_bytes(bytes) - bytes) * count;
  };
  const double held = peak.phase == 4 ? 0 : std::max(1.0, req.micro_batches_held);
  for (const auto& t : pass.saved)
    add_block(t.bytes * micro, held);
  const double per_param = r.stored_weight_bytes * req.share.weights + r.optimizer_bytes * req.share.optimizer +
                           r.grad_bytes * req.share.grads;
  for (std::size_t i = req.first; i < req.last; ++i)
    for (const auto t : model.layers[i].param_tensors)
      add_block(static_cast<double>(t) * per_param / 3, 3);
  m.activations_per_sample = micro > 0 ? m.activations / micro : 0;
  m.activations_held = peak.phase == 4 ? 0 : std::max(0.0, req.micro_batches_held) * kept_per_micro * micro;
  m.peak_reserved = m.total() + rounding;
  m.device_used = m.peak_reserved + ctx.cuda_context_bytes;
  return m;
}

}  // namespace dtsim
