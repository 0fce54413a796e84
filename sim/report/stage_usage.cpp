// See stage_usage.hpp.
#include "sim/report/stage_usage.hpp"

#include "sim/report/device_communication.hpp"

#include <algorithm>
#include <array>

namespace dtsim {

namespace {

enum Part { Forward, Backward, Recompute, Optimizer, TensorParallel, Pipeline, DataParallel, Parts };

/// The part a task of `category` counts towards; Parts for none (markers, loader, input copies).
Part part_of(TaskCategory category, bool transfer)
{
  if (!transfer) {
    if (category == TaskCategory::Forward)
      return Forward;
    if (category == TaskCategory::Backward)
      return Backward;
    if (category == TaskCategory::Recompute)
      return Recompute;
    if (category == TaskCategory::Optimizer)
      return Optimizer;
  }
  if (category == TaskCategory::TensorParallel)
    return TensorParallel;
  if (category == TaskCategory::Activation || category == TaskCategory::ActivationGrad)
    return Pipeline;
  if (category == TaskCategory::AllReduce || category == TaskCategory::AllGather ||
      category == TaskCategory::EmbeddingGrad)
    return DataParallel;
  return Parts;
}

/// Length of `spans` outside `covered` (both sorted unions are computed here), and `covered` grown by them.
double added_length(std::vector<Span>& covered, std::vector<Span> spans)
{
  const double before = union_length(covered);
  covered.insert(covered.end(), spans.begin(), spans.end());
  return union_length(covered) - before;
}

}  // namespace

std::vector<StageUsage> stage_usage(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                                    double iteration_time_s)
{
  std::vector<StageUsage> out;
  const int measured = static_cast<int>(plan.iteration_end.size()) - plan.warmup_iterations;
  if (plan.stage_devices.size() < 2 || measured <= 0)
    return out;
  const auto& tasks = plan.graph.tasks();
  const auto steady_compute = [&](std::size_t i) {
    const Task& t = tasks[i];
    return t.iteration >= plan.warmup_iterations && static_cast<int>(i) > plan.setup_end && t.kind == TaskKind::Compute &&
           t.device >= 0;
  };
  // Each stage's GPU with the most compute: with step-time jitter its stage runs at that rank's pace
  // (the tensor-parallel collectives wait for it), and its waiting is the stage's, not its peers' wait
  // for a slower rank; a folded plan's representative runs at its slowest image's pace, so the two agree.
  std::vector<double> compute_of(topology.devices().size(), 0.0);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (steady_compute(i) && part_of(tasks[i].category, false) != Parts)
      compute_of[static_cast<std::size_t>(tasks[i].device)] += spans[i].end - spans[i].start;
  std::vector<int> device_of(plan.stage_devices);
  for (std::size_t s = 0; s < device_of.size() && s < plan.stage_gpus.size(); ++s)
    for (const int g : plan.stage_gpus[s])
      if (compute_of[static_cast<std::size_t>(g)] > compute_of[static_cast<std::size_t>(device_of[s])])
        device_of[s] = g;
  std::vector<int> stage_of(topology.devices().size(), -1);
  for (std::size_t s = 0; s < device_of.size(); ++s)
    stage_of[static_cast<std::size_t>(device_of[s])] = static_cast<int>(s);
  std::vector<std::array<std::vector<Span>, Parts>> parts(device_of.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!steady_compute(i))
      continue;
    const Task& t = tasks[i];
    const int s = stage_of[static_cast<std::size_t>(t.device)];
    const Part p = part_of(t.category, false);
    if (s >= 0 && p != Parts)
      parts[static_cast<std::size_t>(s)][p].push_back(spans[i]);
  }
  // Communication: a transfer the stage's GPU sends, a folded plan's delay standing for one, or a
  // collective's start-up on its rank (NCCL's launch and per-hop latency, a delay in the collective's
  // category: sim/collectives/collective.cpp), when the rank is in that communication rather than
  // waiting; and each collective from its last rank's join to the GPU's result (device_communication.hpp).
  for (std::size_t s = 0; s < device_of.size(); ++s) {
    const int device = device_of[s];
    const auto counted = [&](const Task& t, int id) {
      return t.iteration >= plan.warmup_iterations && id > plan.setup_end && (is_communication(t) || is_collective_startup(t)) &&
             (t.kind != TaskKind::Transfer || (t.src == device && t.dst != device)) && part_of(t.category, true) != Parts;
    };
    for (const DeviceCommunication& c : communication_on(plan, spans, device, counted))
      parts[s][part_of(tasks[static_cast<std::size_t>(c.task)].category, true)].push_back(c.span);
  }
  for (std::size_t s = 0; s < parts.size(); ++s) {
    StageUsage u;
    u.stage = static_cast<int>(s);
    u.device = topology.device(device_of[s]).name;
    auto& p = parts[s];
    std::vector<Span> covered;  // compute first, then communication outside it, in this order
    u.forward_s = added_length(covered, p[Forward]);
    u.backward_s = added_length(covered, p[Backward]);
    u.recompute_s = added_length(covered, p[Recompute]);
    u.optimizer_s = added_length(covered, p[Optimizer]);
    u.tensor_parallel_s = added_length(covered, p[TensorParallel]);
    u.pipeline_s = added_length(covered, p[Pipeline]);
    u.data_parallel_s = added_length(covered, p[DataParallel]);
    for (double* v : {&u.forward_s, &u.backward_s, &u.recompute_s, &u.optimizer_s, &u.tensor_parallel_s,
                      &u.pipeline_s, &u.data_parallel_s})
      *v /= measured;
    u.waiting_s = std::max(0.0, iteration_time_s - union_length(covered) / measured);
    out.push_back(u);
  }
  return out;
}

}  // namespace dtsim
