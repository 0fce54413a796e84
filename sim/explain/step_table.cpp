#include "sim/explain/step_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace dtsim {

std::string short_device_name(const Topology& topology, int device)
{
  const Device& d = topology.device(device);
  if (d.kind == DeviceKind::Cpu)
    return topology.nodes > 1 ? fmt::format("n{}.host", d.node) : "host";
  if (d.kind != DeviceKind::Gpu)
    return d.name;
  return topology.nodes > 1 ? fmt::format("n{}.GPU{}", d.node, d.local_index) : fmt::format("GPU{}", d.local_index);
}

namespace {

// "GPU0", "GPU1-3", "GPU0,GPU2", "all GPUs"; ranges only for consecutive GPUs of one node.
std::string device_set(const Topology& topology, const Plan& plan, const std::set<int>& devices)
{
  if (devices.size() > 1 && devices.size() == plan.ranks.size() &&
      std::all_of(plan.ranks.begin(), plan.ranks.end(), [&](int r) { return devices.count(r) > 0; }))
    return plan.ranks.size() > 4 ? fmt::format("all {} GPUs", plan.ranks.size())
                                 : short_device_name(topology, *devices.begin()) + "-" +
                                       std::to_string(topology.device(*devices.rbegin()).local_index);
  std::string out;
  for (int d : devices)
    out += (out.empty() ? "" : ",") + short_device_name(topology, d);
  return out;
}

std::string link_kinds(const Topology& topology, const std::set<int>& links)
{
  std::set<std::string> kinds;
  for (int l : links) {
    switch (topology.link(l).kind) {
      case LinkKind::NvLink: kinds.insert("NVLink"); break;
      case LinkKind::Pcie: kinds.insert("PCIe"); break;
      case LinkKind::CpuInterconnect: kinds.insert("CPU"); break;
      case LinkKind::Network: kinds.insert("network"); break;
    }
  }
  std::string out;
  for (const char* k : {"NVLink", "PCIe", "CPU", "network"})
    if (kinds.count(k))
      out += (out.empty() ? "" : "+") + std::string(k);
  return out.empty() ? "-" : out;
}

struct Acc {
  StepRow row;
  std::set<int> src, dst, compute_on, links;
  double first = 1e300, last = -1e300;
  int first_task = 0;
};

std::vector<StepRow> rows_of(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                             const std::vector<int>& tasks, double origin)
{
  std::map<std::tuple<std::string, int, int>, Acc> acc;
  const auto gpu = [&](int d) { return topology.device(d).kind == DeviceKind::Gpu; };
  for (int id : tasks) {
    const Task& t = plan.graph[id];
    if (t.category == "marker")
      continue;
    const int device_key = plan.pipeline_stages > 1 && t.kind != TaskKind::Transfer ? t.device : -1;
    auto [it, fresh] = acc.try_emplace({t.category, t.group, device_key});
    Acc& a = it->second;
    if (fresh) {
      a.row.category = t.category;
      a.row.group = t.group;
      a.first_task = id;
    }
    const Span& s = spans[static_cast<std::size_t>(id)];
    a.first = std::min(a.first, s.start);
    a.last = std::max(a.last, s.end);
    if (t.kind == TaskKind::Transfer && t.src != t.dst) {
      a.src.insert(t.src);
      a.dst.insert(t.dst);
      a.row.bytes += t.bytes;
      a.row.transfers += 1;
      a.row.inter_gpu = a.row.inter_gpu || (gpu(t.src) && gpu(t.dst));
      for (const Hop& h : topology.route(t.src, t.dst))
        a.links.insert(h.link);
    } else if (t.kind == TaskKind::Compute || (t.kind == TaskKind::Delay && t.device >= 0)) {
      a.compute_on.insert(t.device);
    }
  }
  std::vector<Acc> sorted;
  for (auto& [key, a] : acc)
    sorted.push_back(std::move(a));
  std::sort(sorted.begin(), sorted.end(), [](const Acc& x, const Acc& y) {
    return x.first != y.first ? x.first < y.first : x.first_task < y.first_task;
  });
  std::vector<StepRow> out;
  for (auto& a : sorted) {
    StepRow r = a.row;
    if (r.transfers > 0) {
      r.who = device_set(topology, plan, a.src) + " -> " + device_set(topology, plan, a.dst);
      if (a.src == a.dst && a.src.size() > 1)
        r.who = device_set(topology, plan, a.src) + " -> each other";
      r.links = link_kinds(topology, a.links);
    } else {
      r.who = device_set(topology, plan, a.compute_on);
      r.links = "-";
    }
    r.start = a.first - origin;
    r.duration = a.last - a.first;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

StepTable build_step_table(const Topology& topology, const Plan& plan, const std::vector<Span>& spans, int iteration)
{
  StepTable table;
  std::vector<int> once, steps;
  for (int id = 0; id < plan.graph.size(); ++id) {
    if (id <= plan.setup_end)
      once.push_back(id);
    else if (plan.graph[id].iteration == iteration)
      steps.push_back(id);
  }
  // Times count from the end of the previous iteration: the steady-state iteration is the time
  // between two ends. Work of this iteration that began earlier (a DataLoader prefetching the next
  // batch during the previous step) starts at a negative time.
  const double origin =
      iteration > 0 ? spans[static_cast<std::size_t>(plan.iteration_end[static_cast<std::size_t>(iteration - 1)])].end : 0.0;
  table.once = rows_of(topology, plan, spans, once, 0.0);
  table.steps = rows_of(topology, plan, spans, steps, origin);
  table.iteration_s = spans[static_cast<std::size_t>(plan.iteration_end[static_cast<std::size_t>(iteration)])].end - origin;
  table.per_gpu = gpu_usage(topology, plan, spans, table.iteration_s);
  for (std::size_t k = 0; k < table.per_gpu.size(); ++k)
    table.per_gpu[k].device = short_device_name(topology, plan.ranks[k]);
  for (const auto& r : table.steps) {
    if (r.inter_gpu) {
      table.inter_gpu_steps += 1;
      table.inter_gpu_transfers += r.transfers;
    }
  }
  return table;
}

}  // namespace dtsim
