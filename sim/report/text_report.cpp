#include "sim/report/text_report.hpp"

#include "sim/report/memory_report.hpp"

#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtsim {

namespace {

// 1281167 -> "1,281,167"
std::string thousands(double value)
{
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  const auto n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - i - 1) % 3 == 0 && i + 1 < n && digits[i] != '-')
      out += ',';
  }
  return out;
}

std::string duration(double seconds)
{
  if (seconds >= 2 * kSecondsPerDay)
    return fmt::format("{:.2f} days", seconds / kSecondsPerDay);
  if (seconds >= 2 * 3600)
    return fmt::format("{:.2f} h", seconds / 3600);
  if (seconds >= 120)
    return fmt::format("{:.1f} min", seconds / 60);
  if (seconds >= 1)
    return fmt::format("{:.3f} s", seconds);
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

// "all_reduce bucket 0 7.8 MiB, send_recv stage 0->1 activations 117.2 MiB in 10 calls x 2 groups"
std::string sizes_mib(const std::vector<CommGroup>& groups)
{
  std::string out;
  for (const auto& g : groups) {
    out += fmt::format("{}{} {} {:.1f} MiB", out.empty() ? "" : ", ", g.op, g.label, g.bytes / kMiB);
    if (g.calls > 1)
      out += fmt::format(" in {} calls", g.calls);
    if (g.groups > 1)
      out += fmt::format(" x {} groups", g.groups);
  }
  return out;
}

}  // namespace

std::string text_report(const RunResult& r)
{
  std::string out;
  auto line = [&out](const std::string& s) { out += s + "\n"; };
  line(fmt::format("dtsim prediction: {}", r.scenario));
  line(fmt::format("  cluster    {}: {} GPU(s) used on {} node(s) of {} {}", r.topology, r.gpus, r.nodes_used,
                   r.gpus_per_node, r.gpu));
  line(fmt::format("  model      {}: {} parameters, {:.1f} MB of gradients per replica", r.model, thousands(static_cast<double>(r.params)),
                   r.gradient_bytes / 1e6));
  line(fmt::format("  strategy   {}", r.strategy));
  line(fmt::format("  batch      global {} = micro-batch {:g} x {} micro-step{} x {} data-parallel replica{}", r.global_batch,
                   r.micro_batch, r.gradient_accumulation, r.gradient_accumulation == 1 ? "" : "s", r.data_parallel,
                   r.data_parallel == 1 ? "" : "s"));
  line(fmt::format("  compute    {}", r.compute_source));
  if (!r.comm_per_iteration.empty())
    line(fmt::format("  per step   {}   (per group of GPUs: the tensors its calls are made on, summed over one iteration)",
                     sizes_mib(r.comm_per_iteration)));
  if (!r.memory_fits)  // the verdict first: the times below are of a run that would stop out of memory
    line(fmt::format("  memory     DOES NOT FIT: {} (the memory table below says where, and what would fit)",
                     memory_verdict(r)));
  line("");
  line(fmt::format("One iteration (steady state: mean of {} simulated after {} warm-up; spread {:.2f}%)",
                   r.simulated_iterations - r.warmup_iterations, r.warmup_iterations, r.iteration_spread * 100));
  line(fmt::format("  iteration time           {:>12.6f} s", r.iteration_time_s));
  line(fmt::format("  compute                  {:>12.6f} s", r.compute_time_s));
  if (r.nccl_slowdown_s > 0)
    line(fmt::format("    slowed beside NCCL     {:>12.6f} s   (part of compute: kernels sharing SMs and HBM with NCCL's collectives)",
                     r.nccl_slowdown_s));
  line(fmt::format("  communication            {:>12.6f} s   (time the first GPU has a collective or transfer under way)", r.comm_time_s));
  line(fmt::format("  waiting for slowest GPU  {:>12.6f} s   ({})", r.straggler_wait_s,
                   r.pipeline_stages > 1 ? "the other stages waiting for the slowest stage's compute" : "its compute over the mean"));
  if (r.host_step_s > 0)
    line(fmt::format("  optimizer step on host   {:>12.6f} s   (the GPU idle while the CPU steps: offloaded optimizer)", r.host_step_s));
  line(fmt::format("  exposed communication    {:>12.6f} s   (not hidden behind compute)", r.exposed_comm_time_s));
  for (const auto& c : r.comm_overlap)
    line(fmt::format("    {:<22} {:>12.6f} s   on the critical path, of {:.6f} s in flight on the first GPU ({:.0f}% hidden)",
                     c.category, c.exposed_s, c.in_flight_s, c.in_flight_s > 0 ? 100 * (1 - c.exposed_s / c.in_flight_s) : 100.0));
  if (r.pipeline_stages > 1)
    line(fmt::format("  pipeline bubble          {:>12.6f} s   (fill and drain: the waiting every stage has)",
                     r.pipeline_bubble_s));
  if (r.input_time_s > 0)
    line(fmt::format("  waiting for input        {:>12.6f} s   (the DataLoader needs {:.6f} s per batch{})", r.input_wait_s,
                     r.input_time_s,
                     r.input_bound ? fmt::format("; INPUT-BOUND: {:.0f}% of the iteration", 100 * r.input_wait_s / r.iteration_time_s)
                                   : ""));
  if (!r.critical_path.empty()) {
    std::string parts;
    for (std::size_t k = 0; k < r.critical_path.size() && k < 6; ++k) {
      const double share = 100 * r.critical_path[k].seconds / r.iteration_time_s;
      if (share >= 0.05)
        parts += fmt::format("{}{} {:.1f}%", k ? ", " : "", r.critical_path[k].category, share);
    }
    line(fmt::format("  critical path            {}   (what set the iteration's length, by kind of step)", parts));
  }
  line("");
  line("Throughput and scaling");
  line(fmt::format("  throughput               {:>12.1f} samples/s   (one GPU: {:.1f} samples/s)", r.throughput_samples_per_s,
                   r.single_gpu_throughput));
  line(fmt::format("  speedup vs 1 GPU         {:>12.2f} x on {} GPUs", r.speedup_vs_1gpu, r.gpus));
  line(fmt::format("  scaling efficiency       {:>12.1f} %", r.scaling_efficiency * 100));
  line("");
  line(fmt::format("Training time: {} samples x {} epochs", thousands(r.dataset_samples), r.epochs));
  line(fmt::format("  single GPU (by hand)     {:>12}   = {} batches of {} x {:.4g} s x {} epochs",
                   duration(r.single_gpu_total_days * kSecondsPerDay), thousands(r.single_gpu_iterations_per_epoch),
                   r.batch_per_gpu, r.single_gpu_iteration_s, r.epochs));
  // A model-parallel run exists because the whole model does not fit one GPU: when each GPU's share
  // fits, that is no warning, only a note on what the single-GPU figures are.
  if (!r.single_gpu_fits && r.memory_fits && r.gpus > 1)
    line(fmt::format("  note: the single-GPU figures are arithmetic: the whole model at batch {} would need {:.1f} GiB, more "
                     "than one {}'s {:.1f} GiB (each GPU's share here fits)",
                     r.batch_per_gpu, r.single_gpu_memory_bytes / kGiB, r.gpu, r.gpu_memory_bytes / kGiB));
  else if (!r.single_gpu_fits)
    line(fmt::format("  WARNING: the whole model at batch {} needs {:.1f} GiB, more than one {}'s {:.1f} GiB: the "
                     "single-GPU figures are arithmetic, not a run one GPU could do",
                     r.batch_per_gpu, r.single_gpu_memory_bytes / kGiB, r.gpu, r.gpu_memory_bytes / kGiB));
  line(fmt::format("  ideal linear, {:>3} GPUs   {:>12}   = single GPU / {}", r.gpus,
                   duration(r.ideal_linear_total_days * kSecondsPerDay), r.gpus));
  line(fmt::format("  simulated,    {:>3} GPUs   {:>12}   = {} iterations x {:.6f} s x {} epochs (epoch {})", r.gpus,
                   duration(r.total_time_s), thousands(r.iterations_per_epoch), r.iteration_time_s, r.epochs,
                   duration(r.epoch_time_s)));
  if (r.reference.single_gpu_throughput > 0) {
    const auto& ref = r.reference;
    line(fmt::format("  NOTE: this compute is {:.1f} samples/s per GPU; {} measured {:.1f}. With that figure:",
                     r.single_gpu_throughput, ref.source, ref.single_gpu_throughput));
    line(fmt::format("  {:<25}{:>12}", "  single GPU", duration(ref.single_gpu_total_days * kSecondsPerDay)));
    line(fmt::format("  {:<25}{:>12}   = {:.6f} s per iteration, {:.1f} samples/s, scaling efficiency {:.1f}%",
                     fmt::format("  simulated, {:>3} GPUs", r.gpus), duration(ref.total_days * kSecondsPerDay),
                     ref.iteration_time_s, ref.throughput, ref.scaling_efficiency * 100));
  }
  if (!r.per_gpu.empty())
    out += "\n" + per_gpu_text(r);
  if (!r.memory.empty())
    out += "\n" + memory_text(r);
  if (!r.notes.empty()) {
    line("");
    line("Modelled as");
    for (const auto& n : r.notes)
      line("  - " + n);
  }
  return out;
}

}  // namespace dtsim
