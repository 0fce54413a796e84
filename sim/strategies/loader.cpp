#include "sim/strategies/loader.hpp"

#include <fmt/format.h>

namespace dtsim {

LoaderSpec parse_loader(const Scenario& scenario, const Model& model)
{
  LoaderSpec s;
  s.input_bytes_per_sample = model.input_elems * 4.0;
  const auto r = scenario.reader().at("training").find("loader");
  if (!r)
    return s;
  r->reject_unknown({"workers", "per_sample_ms", "input_bytes_per_sample"});
  s.enabled = true;
  s.workers = r->at("workers").as_count(1024);  // DataLoader worker processes: one per host core at most
  s.per_sample_s = r->at("per_sample_ms").as_non_negative() * 1e-3;
  s.input_bytes_per_sample = r->positive_or("input_bytes_per_sample", s.input_bytes_per_sample);
  return s;
}

int host_cpu_of(const Topology& topology, int gpu)
{
  int best = -1;
  std::size_t best_hops = 0;
  const int node = topology.device(gpu).node;
  for (int cpu : topology.devices_of_kind(DeviceKind::Cpu)) {
    if (topology.device(cpu).node != node)
      continue;
    const std::size_t hops = topology.route(cpu, gpu).size();
    if (best < 0 || hops < best_hops) {
      best = cpu;
      best_hops = hops;
    }
  }
  return best;
}

int LoaderLane::load(TaskGraph& graph, double samples)
{
  if (!spec_.enabled)
    return -1;
  std::vector<int> after;
  if (last_ >= 0)
    after.push_back(last_);
  last_ = graph.add_delay(device_, spec_.batch_seconds(samples),
                          fmt::format("load {:.0f} samples ({} workers, {})", samples, spec_.workers, who_), "load",
                          std::move(after));
  return last_;
}

int add_input_copy(TaskGraph& graph, const Topology& topology, const LoaderSpec& spec, int gpu, double samples,
                   std::vector<int> after, const std::string& name)
{
  if (!spec.enabled)
    return -1;
  const int cpu = host_cpu_of(topology, gpu);
  if (cpu < 0)
    return -1;
  return graph.add_transfer(cpu, gpu, samples * spec.input_bytes_per_sample, name, "h2d", std::move(after));
}

}  // namespace dtsim
