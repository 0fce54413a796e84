#include "sim/report/results.hpp"

#include "sim/report/device_communication.hpp"

#include "sim/util/units.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

namespace dtsim {

void analyse(const Plan& plan, const std::vector<Span>& spans, RunResult& r)
{
  const int iterations = static_cast<int>(plan.iteration_end.size());
  if (plan.warmup_iterations < 1 || iterations <= plan.warmup_iterations)
    throw std::logic_error("analyse: needs at least one warm-up and one measured iteration");
  r.simulated_iterations = iterations;
  r.warmup_iterations = plan.warmup_iterations;
  const auto end_of = [&](int it) { return spans[static_cast<std::size_t>(plan.iteration_end[static_cast<std::size_t>(it)])].end; };
  r.setup_time_s = plan.setup_end >= 0 ? spans[static_cast<std::size_t>(plan.setup_end)].end : 0.0;

  std::vector<double> durations;
  for (int it = plan.warmup_iterations; it < iterations; ++it)
    durations.push_back(end_of(it) - end_of(it - 1));
  const double measured = static_cast<double>(iterations - plan.warmup_iterations);
  r.iteration_time_s = (end_of(iterations - 1) - end_of(plan.warmup_iterations - 1)) / measured;
  const auto [lo, hi] = std::minmax_element(durations.begin(), durations.end());
  r.iteration_spread = (*hi - *lo) / r.iteration_time_s;

  std::vector<std::vector<Span>> transfers(static_cast<std::size_t>(iterations));
  const auto& tasks = plan.graph.tasks();
  // The first GPU's communication, as compute is one GPU's: a folded plan simulates only its
  // representatives, and the union over every GPU grows with the ranks' jitter. Its collectives'
  // start-ups count, as a folded plan's delays (each a whole collective) hold them; a collective
  // counts from its last rank's join to the GPU's result (device_communication.hpp).
  const auto counted = [&](const Task& t, int id) {
    return (is_communication(t) || is_collective_startup(t)) && t.iteration >= plan.warmup_iterations && id > plan.setup_end;
  };
  for (const DeviceCommunication& c : communication_on(plan, spans, plan.ranks.front(), counted))
    transfers[static_cast<std::size_t>(tasks[static_cast<std::size_t>(c.task)].iteration)].push_back(c.span);
  double comm = 0;
  for (int it = plan.warmup_iterations; it < iterations; ++it)
    comm += union_length(std::move(transfers[static_cast<std::size_t>(it)]));
  r.comm_time_s = comm / measured;
  r.compute_time_s = plan.compute_per_iteration_s;

  // Synchronous training waits for the slowest GPU: split the time not spent computing into that
  // wait (slowest GPU's compute minus the mean) and communication nothing hid.
  // Per measured iteration and rank, the spans of its compute tasks, and the host's optimizer work
  // on the first GPU (optimizer tasks that are delays: the GPU does not run them), in one pass.
  std::map<int, std::size_t> rank_of;
  for (const int device : plan.ranks)
    rank_of.emplace(device, rank_of.size());
  const auto measured_count = static_cast<std::size_t>(iterations - plan.warmup_iterations);
  std::vector<std::vector<std::vector<Span>>> compute_of(measured_count, std::vector<std::vector<Span>>(plan.ranks.size()));
  double host = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.iteration < plan.warmup_iterations || t.iteration >= iterations)
      continue;
    if (t.kind == TaskKind::Delay && t.category == TaskCategory::Optimizer && t.device == plan.ranks.front())
      host += spans[i].end - spans[i].start;
    if (t.kind != TaskKind::Compute)
      continue;
    if (const auto rank = rank_of.find(t.device); rank != rank_of.end())
      compute_of[static_cast<std::size_t>(t.iteration - plan.warmup_iterations)][rank->second].push_back(spans[i]);
  }
  double slowest_total = 0;
  double mean_total = 0;
  for (std::size_t m = 0; m < compute_of.size(); ++m) {
    auto& per_rank = compute_of[m];
    double slowest = 0;
    double sum = 0;
    for (std::size_t k = 0; k < per_rank.size(); ++k) {
      const double busy = union_length(std::move(per_rank[k]));
      slowest = std::max(slowest, busy);
      // Folded: the GPU ran at its slowest image's pace; the ranks it stands for average its busy time over that factor.
      sum += plan.folded_jitter.empty() ? busy
                                        : busy / plan.folded_jitter[k][m + static_cast<std::size_t>(plan.warmup_iterations)];
    }
    slowest_total += slowest;
    mean_total += sum / static_cast<double>(plan.ranks.size());
  }
  r.straggler_wait_s = std::max(0.0, (slowest_total - mean_total) / measured);
  // The DataLoader supplies a batch every input_seconds_per_iteration: the GPUs wait for it at least
  // its excess over their own work (workers load beside it), or all of it (the main process loads
  // between steps); what is left of the idle time is communication nothing hid.
  const double idle = std::max(0.0, r.iteration_time_s - r.compute_time_s - r.straggler_wait_s);
  r.input_time_s = plan.input_seconds_per_iteration;
  r.nccl_slowdown_s = plan.nccl_slowdown_per_iteration_s;
  const double hidden = plan.input_in_main_process ? 0.0 : r.compute_time_s + r.straggler_wait_s;
  r.input_wait_s = std::clamp(r.input_time_s - hidden, 0.0, idle);
  r.input_bound = r.input_time_s >= 0.98 * r.iteration_time_s;
  r.host_step_s = std::clamp(host / measured, 0.0, idle - r.input_wait_s);
  r.exposed_comm_time_s = idle - r.input_wait_s - r.host_step_s;
  r.critical_path = critical_path_by_category(plan, spans);
  if (r.strategy == "fsdp" || r.strategy == "zero")
    r.comm_overlap = comm_overlap_on(plan, spans, plan.ranks.front(), r.critical_path, 1e-4 * r.iteration_time_s);

  r.samples_per_iteration = plan.samples_per_iteration;
  r.single_gpu_iteration_s = plan.single_gpu_iteration_s;
  r.throughput_samples_per_s = plan.samples_per_iteration / r.iteration_time_s;
  r.single_gpu_throughput = r.batch_per_gpu / plan.single_gpu_iteration_s;
  r.speedup_vs_1gpu = r.throughput_samples_per_s / r.single_gpu_throughput;
  r.scaling_efficiency = r.speedup_vs_1gpu / r.gpus;

  r.iterations_per_epoch = std::ceil(r.dataset_samples / plan.samples_per_iteration);
  r.single_gpu_iterations_per_epoch = std::ceil(r.dataset_samples / r.batch_per_gpu);
  r.epoch_time_s = r.iterations_per_epoch * r.iteration_time_s;
  r.total_time_s = r.setup_time_s + r.epochs * r.epoch_time_s;
  r.total_time_days = r.total_time_s / kSecondsPerDay;
  r.single_gpu_total_days = r.single_gpu_iterations_per_epoch * plan.single_gpu_iteration_s * r.epochs / kSecondsPerDay;
  r.ideal_linear_total_days = r.single_gpu_total_days / r.gpus;
}

void account_pipeline_bubble(RunResult& r)
{
  if (r.stages.empty() || !(r.iteration_time_s > 0))
    return;
  double communication = 0, least_waiting = std::numeric_limits<double>::infinity();
  for (const StageUsage& s : r.stages) {
    communication += s.tensor_parallel_s + s.pipeline_s + s.data_parallel_s;
    least_waiting = std::min(least_waiting, s.waiting_s);
  }
  const auto stages = static_cast<double>(r.stages.size());
  // Every stage of a pipeline waits for the fill and the drain, (p-1) micro-batch slots in 1F1B,
  // (p-1)/v with v chunks; the stages with less compute than the slowest wait besides for it, on every
  // micro-batch of the steady state. So the bubble is the waiting every stage has, the least of the
  // stage table's (with balanced stages all wait alike, (p-1)/(m+p-1) of the iteration); the
  // communication outside compute is the stages' mean of the TP, PP and DP columns; what analyse() left
  // beyond compute, input and the host step and beyond those two is the waiting for the slowest stage.
  const double open = r.exposed_comm_time_s + r.straggler_wait_s;
  r.pipeline_bubble_s = std::clamp(least_waiting, 0.0, open);
  r.exposed_comm_time_s = std::min(communication / stages, open - r.pipeline_bubble_s);
  r.straggler_wait_s = open - r.pipeline_bubble_s - r.exposed_comm_time_s;
  r.bubble_fraction = r.pipeline_bubble_s / r.iteration_time_s;
}

}  // namespace dtsim
