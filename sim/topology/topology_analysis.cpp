#include "sim/topology/topology_analysis.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace dtsim {

namespace {

/// The PCIe switch or CPU socket a GPU/NIC hangs off (-1 when none), and the socket behind it.
std::pair<int, int> pcie_parent(const Topology& t, int device)
{
  for (int l : t.links_of(device)) {
    const Link& link = t.link(l);
    if (link.kind != LinkKind::Pcie)
      continue;
    const int other = link.a == device ? link.b : link.a;
    if (t.device(other).kind == DeviceKind::Cpu)
      return {other, other};
    if (t.device(other).kind == DeviceKind::PcieSwitch) {
      for (int up : t.links_of(other)) {
        const int cpu = t.link(up).a == other ? t.link(up).b : t.link(up).a;
        if (t.device(cpu).kind == DeviceKind::Cpu)
          return {other, cpu};
      }
      return {other, -1};
    }
  }
  return {-1, -1};
}

/// Lanes of the NVLink path a -> NVSwitch -> b (the smaller side), 0 when there is none.
int nvswitch_lanes(const Topology& t, int a, int b)
{
  for (int la : t.links_of(a)) {
    const Link& x = t.link(la);
    const int sw = x.a == a ? x.b : x.a;
    if (x.kind != LinkKind::NvLink || t.device(sw).kind != DeviceKind::NvSwitch)
      continue;
    for (int lb : t.links_between(sw, b))
      if (t.link(lb).kind == LinkKind::NvLink)
        return std::min(x.lanes, t.link(lb).lanes);
  }
  return 0;
}

}  // namespace

std::string path_type(const Topology& t, int a, int b)
{
  if (a == b)
    return "X";
  if (t.device(a).node != t.device(b).node)
    return "NET";
  int lanes = 0;
  for (int l : t.links_between(a, b))
    if (t.link(l).kind == LinkKind::NvLink)
      lanes += t.link(l).lanes;
  if (lanes == 0)
    lanes = nvswitch_lanes(t, a, b);
  if (lanes > 0)
    return fmt::format("NV{}", lanes);
  const auto [pa, sa] = pcie_parent(t, a);
  const auto [pb, sb] = pcie_parent(t, b);
  if (pa >= 0 && pa == pb && t.device(pa).kind == DeviceKind::PcieSwitch)
    return "PIX";
  if (sa >= 0 && sa == sb)
    return "NODE";
  return "SYS";
}

InjectionBandwidth injection_bandwidth(const Topology& t, int rank)
{
  InjectionBandwidth out;
  const int gpu = t.gpus().at(static_cast<std::size_t>(rank));
  for (int l : t.links_of(gpu)) {
    const Link& link = t.link(l);
    if (link.kind == LinkKind::NvLink) {
      out.nvlink += link.bandwidth;
      out.nvlink_lanes += link.lanes;
    } else if (link.kind == LinkKind::Pcie) {
      out.pcie += link.bandwidth;
    }
  }
  const int node = t.device(gpu).node;
  double nic_rate = 0;
  for (int nic : t.nics_of_node(node))
    for (int l : t.links_of(nic))
      if (t.link(l).kind == LinkKind::Network)
        nic_rate += t.link(l).bandwidth;
  const auto gpus = t.gpus_of_node(node).size();
  out.network = gpus > 0 ? nic_rate / static_cast<double>(gpus) : 0;
  return out;
}

double max_flow_between(const Topology& t, const std::vector<int>& from_ranks, const std::vector<int>& to_ranks)
{
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = t.devices().size();
  Graph g(n + 2);
  const std::size_t source = n, sink = n + 1;
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  // Capacities in whole kB/s: push_relabel's flow-conservation checks (asserted in Boost) hold only
  // in exact arithmetic, and a link's rate to 1 kB/s is far finer than any figure printed.
  constexpr double kUnit = 1e3;
  const auto units = [](double bytes_per_s) { return static_cast<std::int64_t>(std::llround(bytes_per_s / kUnit)); };
  auto arc = [&](std::size_t u, std::size_t v, std::int64_t cap) {
    auto e = boost::add_edge(u, v, g).first;
    auto r = boost::add_edge(v, u, g).first;
    capacity[e] = cap;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };

  // Sending GPUs take no traffic in, receiving GPUs send none on: no GPU relays for another.
  std::vector<int> role(n, 0);  // 1 = sender, 2 = receiver
  for (int r : from_ranks)
    role[static_cast<std::size_t>(t.gpus().at(static_cast<std::size_t>(r)))] = 1;
  for (int r : to_ranks)
    role[static_cast<std::size_t>(t.gpus().at(static_cast<std::size_t>(r)))] = 2;
  const auto may_leave = [&](int d) {
    return t.gpu_forwarding || t.device(d).kind != DeviceKind::Gpu || role[static_cast<std::size_t>(d)] == 1;
  };
  const auto may_enter = [&](int d) {
    return t.gpu_forwarding || t.device(d).kind != DeviceKind::Gpu || role[static_cast<std::size_t>(d)] == 2;
  };
  std::int64_t total = 0;
  for (const Link& l : t.links()) {
    const std::int64_t cap = units(l.bandwidth);
    total += cap;
    if (may_leave(l.a) && may_enter(l.b))
      arc(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), cap);
    if (may_leave(l.b) && may_enter(l.a))
      arc(static_cast<std::size_t>(l.b), static_cast<std::size_t>(l.a), cap);
  }
  const std::int64_t unbounded = 2 * total + 1;
  for (std::size_t d = 0; d < n; ++d) {
    if (role[d] == 1)
      arc(source, d, unbounded);
    if (role[d] == 2)
      arc(d, sink, unbounded);
  }
  return static_cast<double>(boost::push_relabel_max_flow(g, source, sink)) * kUnit;
}

double nccl_link_bandwidth(const Topology& t, const Link& link)
{
  switch (link.kind) {
    case LinkKind::NvLink: {
      const int cc = t.gpu.compute_capability;
      const double per_lane = cc >= 100 ? 40.1 : cc >= 90 ? 20.6 : cc == 86 ? 12.0 : cc >= 70 ? 20.0 : 18.0;
      return link.lanes * per_lane * 1e9;
    }
    case LinkKind::Pcie:
      // NCCL's 12 GB/s for a gen3 x16 link against its nominal 15.75 GB/s, the same ratio for gen4/5.
      return link.bandwidth * 12e9 / (8e9 * 16 * 128.0 / 130.0 / 8.0);
    case LinkKind::CpuInterconnect:
    case LinkKind::Network: return link.bandwidth;
  }
  return link.bandwidth;
}

double bisection_bandwidth(const Topology& t)
{
  const int n = static_cast<int>(t.gpus().size());
  if (n < 2)
    return 0;
  std::vector<int> first(static_cast<std::size_t>(n / 2)), second(static_cast<std::size_t>(n - n / 2));
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), n / 2);
  return max_flow_between(t, first, second);
}

}  // namespace dtsim
