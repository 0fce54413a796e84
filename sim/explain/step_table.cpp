#include "sim/explain/step_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
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
  return topology.nodes > 1 ? d.name : fmt::format("GPU{}", d.local_index);  // as `dtsim run` names it
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
  if (devices.size() > 6)
    return fmt::format("{} GPUs", devices.size());
  std::string out;
  std::set<std::string> named;  // a node's CPU sockets are all its host
  for (int d : devices)
    if (const std::string name = short_device_name(topology, d); named.insert(name).second)
      out += (out.empty() ? "" : ",") + name;
  return out;
}

// The GPUs of a set of transfer ends (NICs and hosts a transfer is staged through are not who
// takes part), or the set itself when it has no GPU.
std::set<int> gpus_of(const Topology& topology, const std::set<int>& devices)
{
  std::set<int> out;
  for (int d : devices)
    if (topology.device(d).kind == DeviceKind::Gpu)
      out.insert(d);
  return out.empty() ? devices : out;
}

std::set<int> minus(const std::set<int>& a, const std::set<int>& b)
{
  std::set<int> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

// "GPU0 -> GPU1,GPU2,GPU3": a rooted collective reads as its root and the others, although a ring
// or tree forwards through every GPU (broadcast, scatter: the one sender that receives nothing;
// reduce, gather: the one receiver that sends nothing).
std::string who_of_transfers(const Topology& topology, const Plan& plan, TaskCategory category,
                             const std::set<int>& src_ends, const std::set<int>& dst_ends)
{
  const std::set<int> src = gpus_of(topology, src_ends), dst = gpus_of(topology, dst_ends);
  std::set<int> all = src;
  all.insert(dst.begin(), dst.end());
  if (category == TaskCategory::Broadcast || category == TaskCategory::Replicate || category == TaskCategory::Scatter) {
    if (const auto root = minus(src, dst); root.size() == 1)
      return device_set(topology, plan, root) + " -> " + device_set(topology, plan, minus(all, root));
  }
  if (category == TaskCategory::Reduce || category == TaskCategory::Gather) {
    if (const auto sink = minus(dst, src); sink.size() == 1)
      return device_set(topology, plan, minus(all, sink)) + " -> " + device_set(topology, plan, sink);
  }
  if (src == dst && src.size() > 1)
    return device_set(topology, plan, src) + " -> each other";
  return device_set(topology, plan, src) + " -> " + device_set(topology, plan, dst);
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
  std::map<std::tuple<TaskCategory, int, int>, Acc> acc;
  const auto gpu = [&](int d) { return topology.device(d).kind == DeviceKind::Gpu; };
  for (int id : tasks) {
    const Task& t = plan.graph[id];
    if (t.category == TaskCategory::Marker)
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
      r.who = who_of_transfers(topology, plan, r.category, a.src, a.dst);
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
