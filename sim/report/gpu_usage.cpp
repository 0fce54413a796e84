#include "sim/report/gpu_usage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace dtsim {

std::vector<GpuUsage> gpu_usage(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                                double iteration_time_s)
{
  std::vector<int> slot(topology.devices().size(), -1);  // per device: its row, or -1
  std::vector<GpuUsage> out;
  const int stands_for = plan.folded_from_gpus > 0 && !plan.ranks.empty()
                             ? plan.folded_from_gpus / static_cast<int>(plan.ranks.size())
                             : 1;
  for (int dev : plan.ranks) {
    slot[static_cast<std::size_t>(dev)] = static_cast<int>(out.size());
    out.push_back({topology.device(dev).name});
    out.back().stands_for = stands_for;
  }
  const auto row = [&slot](int device) { return device >= 0 ? slot[static_cast<std::size_t>(device)] : -1; };
  const int measured = static_cast<int>(plan.iteration_end.size()) - plan.warmup_iterations;
  if (measured <= 0)
    return out;
  // Compute per row and measured iteration: a folded plan's row ran at its slowest image's pace
  // (plan.folded_jitter); the GPUs it stands for are busy that time over the factor on average.
  std::vector<std::vector<std::vector<Span>>> busy(out.size(), std::vector<std::vector<Span>>(static_cast<std::size_t>(measured)));
  const auto& tasks = plan.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.iteration < plan.warmup_iterations || static_cast<int>(i) <= plan.setup_end)
      continue;
    if (t.kind == TaskKind::Transfer && t.src != t.dst) {
      if (const int k = row(t.src); k >= 0)
        out[static_cast<std::size_t>(k)].bytes_sent += t.bytes;
      if (const int k = row(t.dst); k >= 0)
        out[static_cast<std::size_t>(k)].bytes_received += t.bytes;
    } else if (is_communication(t)) {  // a folded plan's delay: what its rank sends, and who receives
      if (const int k = row(t.device); k >= 0)
        out[static_cast<std::size_t>(k)].bytes_sent += t.bytes;
      if (const auto r = plan.folded_received.find(static_cast<int>(i)); r != plan.folded_received.end())
        if (const int k = row(r->second.device); k >= 0)
          out[static_cast<std::size_t>(k)].bytes_received += r->second.bytes;
    } else if (t.kind == TaskKind::Compute) {
      if (const int k = row(t.device); k >= 0 && t.iteration < plan.warmup_iterations + measured)
        busy[static_cast<std::size_t>(k)][static_cast<std::size_t>(t.iteration - plan.warmup_iterations)].push_back(spans[i]);
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k].bytes_sent /= measured;
    out[k].bytes_received /= measured;
    for (std::size_t m = 0; m < busy[k].size(); ++m)
      out[k].busy_s += union_length(std::move(busy[k][m])) /
                       (plan.folded_jitter.empty() ? 1.0 : plan.folded_jitter[k][m + static_cast<std::size_t>(plan.warmup_iterations)]);
    out[k].busy_s /= measured;
    out[k].idle_s = std::max(0.0, iteration_time_s - out[k].busy_s);
  }
  return out;
}

std::vector<GpuMemoryRow> memory_rows(const Topology& topology, const Plan& plan)
{
  std::vector<GpuMemoryRow> rows;
  std::vector<int> merged;  // plan.memory entries per row
  for (const auto& m : plan.memory) {
    const std::string name = topology.device(m.device).name;
    const bool same = !rows.empty() && std::abs(rows.back().memory.total() - m.total()) < 1.0 &&
                      std::abs(rows.back().memory.optimizer - m.optimizer) < 1.0 &&
                      std::abs(rows.back().memory.device_used - m.device_used) < 1.0 &&
                      rows.back().memory.peak_at == m.peak_at;
    if (same) {
      rows.back().devices = rows.back().devices.substr(0, rows.back().devices.find(" .. ")) + " .. " + name;
      ++merged.back();
      continue;
    }
    // What must fit is the device memory the process uses: the allocator's segments and the CUDA context.
    const double used = std::max(m.total(), m.device_used);
    rows.push_back({name, m, plan.gpu_memory_bytes <= 0 || used <= plan.gpu_memory_bytes});
    merged.push_back(1);
  }
  // Folded: each simulated GPU stands for as many GPUs (folded_comms.hpp), which hold the same.
  const auto simulated = static_cast<int>(plan.memory.size());
  if (plan.folded_from_gpus > 0 && simulated > 0 && plan.folded_from_gpus % simulated == 0)
    for (std::size_t r = 0; r < rows.size(); ++r)
      rows[r].devices += fmt::format(" (for {})", merged[r] * (plan.folded_from_gpus / simulated));
  return rows;
}

}  // namespace dtsim
