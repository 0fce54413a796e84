// A parallel plan's last part (parallel_build.hpp): its memory per GPU, the notes that say what was
// modelled, the step-time jitter and, folded, the representatives that stand for every GPU.
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/parallel_build.hpp"
#include "sim/strategies/parallel_memory.hpp"
#include "sim/strategies/roofline.hpp"
#include "sim/strategies/tp_overlap.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

namespace {

/// Memory: one walk per pipeline stage; every data- and tensor-parallel rank of a stage holds the same.
void add_memory(ParallelBuild& b, const LoaderSpec& loader)
{
  Plan& plan = b.plan;
  int busiest_stage = 0;
  const std::vector<GpuMemory> stage_memory =
      parallel_stage_memory(b.scenario, b.model, b.topology.gpu, b.cfg, b.ranges, b.micro, loader.input_bytes_per_sample * b.batch,
                            plan.memory_curve, busiest_stage);
  plan.memory_curve_device = b.dev(0, busiest_stage, 0);
  for (int d = 0; d < b.Dn; ++d)
    for (int s = 0; s < b.P; ++s)
      for (int t = 0; t < b.Tn; ++t) {
        GpuMemory m = stage_memory[static_cast<std::size_t>(s)];
        m.device = b.dev(d, s, t);
        plan.memory.push_back(std::move(m));
      }
  plan.gpu_memory_bytes = b.topology.gpu.memory_bytes;
}

void add_notes(ParallelBuild& b, const LoaderSpec& loader)
{
  Plan& plan = b.plan;
  const ParallelConfig& cfg = b.cfg;
  const int D = b.D, P = b.P, T = b.T, M = b.M, C = b.C;
  std::string stages;
  for (int s = 0; s < b.V; ++s) {
    const auto& r = b.ranges[static_cast<std::size_t>(s)];
    stages += fmt::format("{}{}{} [{} .. {}] {:.1f} ms", s ? "; " : "", s, C > 1 ? fmt::format(" (GPU stage {})", b.stage_of(s)) : "",
                          b.model.layers[r.first].name, b.model.layers[r.last - 1].name,
                          (b.sc[static_cast<std::size_t>(s)].fwd + b.sc[static_cast<std::size_t>(s)].bwd) * M * 1e3);
  }
  plan.notes.push_back(fmt::format("compute: {}; {}{}", describe_compute_source(b.scenario), compute_spread_note(b.scenario, b.topology.gpu),
                                   cfg.half_efficiency_samples > 0
                                       ? fmt::format("; a GPU runs b samples at b/(b+{}) of its large-batch rate",
                                                     cfg.half_efficiency_samples)
                                       : ""));
  plan.notes.push_back(fmt::format("{} data x {} pipeline x {} tensor parallel; batch {} per replica in {} micro-batches "
                                   "of {:.4g}, schedule {}",
                                   D, P, T, b.batch, M, b.micro,
                                   C > 1 ? fmt::format("interleaved 1F1B ({} model chunks per GPU)", C)
                                         : cfg.schedule == PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
  plan.notes.push_back("stages (compute per iteration): " + stages);
  if (P > 1)
    plan.notes.push_back(C > 1 ? fmt::format("ideal bubble (p-1)/(v m+p-1) = {:.1f}% with balanced stages and free links "
                                             "(Narayanan et al. 2021, section 2.2.2)",
                                             100.0 * (P - 1) / (C * M + P - 1))
                               : fmt::format("ideal bubble (p-1)/(m+p-1) = {:.1f}% with balanced stages and free links",
                                             100.0 * (P - 1) / (M + P - 1)));
  if (T > 1) {
    plan.notes.push_back(fmt::format(
        "tensor parallel as Megatron-LM sends it: per transformer layer two {} forward{} on the critical path, the "
        "vocabulary-parallel embedding and cross entropy; ranks laid out {}",
        cfg.sequence_parallel ? "ReduceScatter + AllGather pairs (sequence parallel)" : "AllReduces",
        cfg.tp_backward_overlap ? "" : " and two backward", to_string(cfg.order)));
    if (cfg.tp_backward_overlap)
      plan.notes.push_back(tp_overlap_note(cfg.sequence_parallel, b.topology.gpu, b.overlap_channels,
                                           *std::max_element(b.overlap_slowdown.begin(), b.overlap_slowdown.end())));
  } else if (D > 1 && P > 1)
    plan.notes.push_back(fmt::format("ranks laid out {} (innermost first)", to_string(cfg.order)));
  if (b.pipeline_scatter_gather() && P > 1)
    plan.notes.push_back(fmt::format("pipeline sends scattered and gathered as Megatron-LM 2021-2022 ran them "
                                     "(scatter_gather_tensors_in_pipeline): each tensor rank sends 1/{} of the boundary "
                                     "tensor, the receiving stage AllGathers it over its tensor group before using it",
                                     T));
  else if (cfg.scatter_gather_tensors_in_pipeline && P > 1)
    plan.notes.push_back(cfg.sequence_parallel ? "scatter_gather_tensors_in_pipeline has no effect with sequence parallelism "
                                                 "(Megatron-LM's p2p_communication.py: the sends are already 1/t of the "
                                                 "sequence)"
                                               : "scatter_gather_tensors_in_pipeline has no effect with one tensor rank");
  if (b.embedding_sync)
    plan.notes.push_back(fmt::format("tied word embedding: its gradient ({:.3g} MB per tensor rank) is AllReduced between the "
                                     "first and last stage every iteration",
                                     b.embedding_params / T * b.grad_elem / 1e6));
  if (b.scenario.training.recomputation.any())
    plan.notes.push_back(checkpointing_note(b.scenario.training.recomputation));
  // The input: one DataLoader per replica, a batch per iteration, on the host beside every process.
  plan.notes.push_back(loader.describe() + " (one DataLoader per data-parallel replica, into its first stage)");
  plan.input_seconds_per_iteration = loader.batch_seconds(b.batch);
  plan.input_in_main_process = loader.workers == 0;
  if (const std::string host = loader.host_note(b.batch, plan.compute_per_iteration_s); !host.empty())
    plan.notes.push_back(host);
  plan.host = loader.host_summary(b.batch, plan.compute_per_iteration_s);
  if (b.add_optimizer)
    plan.notes.push_back(fmt::format("optimizer step memory-bound at {:.0f}% of HBM bandwidth{}{}",
                                     100 * (b.roofline ? roofline_memory_efficiency(b.scenario.training.compute) : kMemoryBoundFraction),
                                     b.roofline && b.half_weights ? " with Megatron's unscale, norm, copy and zeroing passes" : "",
                                     cfg.distributed_optimizer ? ", each replica on 1/dp of the parameters" : ""));
}

/// Stragglers dealt over the stages (jitter.hpp): each stage's GPUs one from each stratum; folded, the
/// stages' representatives become the plan's GPUs, each at its D x T images' slowest pace.
void add_jitter_and_fold(ParallelBuild& b)
{
  Plan& plan = b.plan;
  StepJitter jitter = step_jitter(b.scenario, static_cast<int>(plan.ranks.size()));
  std::vector<int> stage_of_rank(plan.ranks.size(), 0);
  for (int s = 0; s < b.P; ++s)
    for (int d = 0; d < b.D; ++d)
      for (int t = 0; t < b.T; ++t)
        stage_of_rank[b.idx(d, s, t)] = s;
  jitter.deal_over_groups(stage_of_rank, "pipeline stages");
  if (!b.fold) {
    plan.notes.push_back(apply_step_jitter(plan.graph, plan.ranks, jitter));
    return;
  }
  std::vector<std::vector<int>> images(static_cast<std::size_t>(b.P));
  for (std::size_t r = 0; r < stage_of_rank.size(); ++r)
    images[static_cast<std::size_t>(stage_of_rank[r])].push_back(static_cast<int>(r));
  const int all_gpus = static_cast<int>(plan.ranks.size());
  plan.notes.push_back(apply_folded_step_jitter(plan.graph, plan.stage_devices, images, jitter, all_gpus, plan.folded_jitter));
  b.folded->finish(plan);
  plan.ranks = plan.stage_devices;
  plan.folded_from_gpus = all_gpus;
  plan.notes.push_back(
      folded_note(*b.folded, all_gpus, b.P, fmt::format("each stage's {} data-parallel x {} tensor-parallel GPUs", b.D, b.T)));
}

}  // namespace

void finish_parallel_plan(ParallelBuild& b, const LoaderSpec& loader)
{
  add_memory(b, loader);
  add_notes(b, loader);
  add_jitter_and_fold(b);
}

}  // namespace dtsim
