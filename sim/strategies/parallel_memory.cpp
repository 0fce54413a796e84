// See parallel_memory.hpp.
#include "sim/strategies/parallel_memory.hpp"

#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/memory_timeline.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace dtsim {

namespace {

/// The activations of a GPU running several model chunks (`m` their peaks summed): one forward or
/// backward step runs at a time (megatron/core/pipeline_parallel/schedules.py
/// forward_backward_pipelining_with_interleaving: one forward_step_helper / backward_step_helper per
/// step), so the GPU holds what every chunk's micro-batches in flight keep and the working set of one
/// chunk only, the largest among those running.
void one_chunk_running(GpuMemory& m, const std::vector<GpuMemory>& parts, const std::vector<int>& in_flight, double micro)
{
  double held = 0, working = 0;
  for (std::size_t c = 0; c < parts.size(); ++c) {
    held += parts[c].activations_held;
    const double beyond = parts[c].activations - parts[c].activations_held;
    if (in_flight[c] > 0 && beyond > working) {
      working = beyond;
      m.peak_at = parts[c].peak_at;
    }
  }
  const double over = m.activations - (held + working);
  m.activations -= over;
  m.activations_held = held;
  m.activations_per_sample = micro > 0 ? m.activations / micro : 0;
  m.peak_reserved -= over;
  m.device_used -= over;
}

}  // namespace

std::vector<GpuMemory> parallel_stage_memory(const Scenario& scenario, const Model& model, const GpuSpec& gpu,
                                             const ParallelConfig& cfg, const std::vector<StageRange>& ranges, double micro,
                                             double input_bytes, std::vector<MemoryPoint>& curve, int& busiest_stage)
{
  const int D = cfg.data, P = cfg.stages, T = cfg.tensor, M = cfg.microbatches, C = cfg.virtual_stages;
  const MemoryContext mctx = memory_context(scenario, gpu, T, cfg.sequence_parallel, cfg.megatron);
  std::vector<GpuMemory> stage_memory(static_cast<std::size_t>(P));
  std::vector<StageMemoryRequest> requests(static_cast<std::size_t>(P));
  for (int s = 0; s < P; ++s) {
    // The micro-batches each chunk holds when the stage's schedule holds the most (interleaving:
    // stage 0 p + (p - 1) / v in all, what Megatron's theoretical_memory_usage.py's 1 + (p - 1) / (p v)
    // factor says for it; later stages fewer), the chunks weighed by their layers.
    std::vector<double> weights;
    for (int chunk = 0; chunk < C; ++chunk) {
      const auto& r = ranges[static_cast<std::size_t>(chunk * P + s)];
      weights.push_back(static_cast<double>(r.last - r.first));
    }
    const std::vector<int> in_flight = micro_batches_in_flight(cfg, s, weights);
    GpuMemory& m = stage_memory[static_cast<std::size_t>(s)];
    std::vector<GpuMemory> parts;
    double step_copies = 0;  // the fp16 step's fp32 gradient copies of all the GPU's chunks
    for (int chunk = 0; chunk < C; ++chunk) {
      const auto& r = ranges[static_cast<std::size_t>(chunk * P + s)];
      StageMemoryRequest req;
      req.first = r.first;
      req.last = r.last;
      req.share.weights = req.share.grads = 1.0 / T;
      // The distributed optimizer: each data-parallel rank holds the states of its 1/dp of the parameters.
      req.share.optimizer = cfg.distributed_optimizer ? 1.0 / (T * D) : 1.0 / T;
      if (P > 1 && s == P - 1 && chunk == C - 1 && tied_embeddings(model))  // the output layer's own copy
        req.extra_params = static_cast<double>(model.layers.front().params());
      req.micro_batch = micro;
      req.micro_batches_held = in_flight[static_cast<std::size_t>(chunk)];
      // Megatron's DDP accumulates into one gradient buffer, allocated once; torch's Pipe into .grad
      // from the first micro-batch's backward on.
      req.grads_persist = cfg.megatron || M > 1;
      // Megatron's fp16 gradient buffer is fp16 (memory_context): the step reads an fp32 copy of the
      // gradients of the parameters it steps, 1/dp of them with the distributed optimizer
      // (megatron/core/optimizer/optimizer.py: Float16OptimizerWithFloat16Params._copy_model_grads_to_main_grads,
      // main_param.grad = model_param.main_grad.float(); distrib_optimizer.py: _copy_model_grads_to_main_grads,
      // shard_main_param.grad = shard_model_grad.float()), alive through the step.
      // Several chunks: their activations are combined (one_chunk_running, below), so the copy is
      // weighed once for the GPU, at its step, where no activations are left.
      const double step_copy = cfg.megatron && scenario.training.precision == Precision::Fp16
                                   ? 4 * (params_in(model, r.first, r.last) + req.extra_params) * req.share.optimizer
                                   : 0.0;
      step_copies += step_copy;
      req.step_grad_bytes = C == 1 ? step_copy : 0.0;
      req.io_bytes = s == 0 && chunk == 0 ? input_bytes : 0;
      const GpuMemory part = gpu_memory(model, mctx, req);
      parts.push_back(part);
      if (chunk == 0) {
        m = part;
        requests[static_cast<std::size_t>(s)] = req;
        requests[static_cast<std::size_t>(s)].step_grad_bytes = step_copy;  // the curve's step shows its copy
        continue;
      }
      // Another chunk on the same GPU: its weights, gradients, states and activations add; the
      // workspaces are shared.
      m.params += part.params;
      m.grads += part.grads;
      m.optimizer += part.optimizer;
      m.activations += part.activations;
      m.peak_reserved += part.peak_reserved - part.workspace;
      m.device_used += part.peak_reserved - part.workspace;
    }
    if (C > 1)
      one_chunk_running(m, parts, in_flight, micro);
    // The GPU's optimizer step, when it holds more than the activations' peak: every chunk's gradient
    // buffer and its fp32 copy, no activations (the allocator's rounding kept as it was).
    if (C > 1 && step_copies > m.activations) {
      const double grown = step_copies - m.activations;
      m.activations = 0;
      m.activations_per_sample = 0;
      m.grads += step_copies;
      m.peak_reserved += grown;
      m.device_used += grown;
      m.peak_at = "the optimizer step";
      const std::pair<const char*, double> terms[] = {{"weights", m.params},          {"gradients", m.grads},
                                                      {"optimizer state", m.optimizer}, {"input/output", m.io},
                                                      {"workspace", m.workspace}};
      m.dominant = std::max_element(std::begin(terms), std::end(terms), [](const auto& a, const auto& b) {
                     return a.second < b.second;
                   })->first;
    }
  }
  {  // the curve of the busiest stage's first GPU (its first chunk under interleaving)
    std::size_t busiest = 0;
    for (std::size_t s = 1; s < stage_memory.size(); ++s)
      if (stage_memory[s].total() > stage_memory[busiest].total())
        busiest = s;
    gpu_memory(model, mctx, requests[busiest], &curve);
    busiest_stage = static_cast<int>(busiest);
  }
  return stage_memory;
}

}  // namespace dtsim
