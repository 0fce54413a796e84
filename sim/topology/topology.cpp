// The machine graph and its routes.
//
// Routing: the devices and full-duplex links become a directed Boost.Graph (one arc per direction
// of each link) and routes are Dijkstra shortest paths on it. The cost of crossing a link is
//     1 + 1e7 / bandwidth[bytes/s]
// i.e. routes are shortest in hops, and among routes with equally many hops the one with the
// higher bandwidth wins (for rates >= 1 GB/s the tie-break adds < 0.01 per hop, so it never buys a
// longer route). This is why, on an NVSwitch box, GPU -> NVSwitch -> GPU (2 hops, 300 GB/s) is
// chosen over GPU -> PCIe switch -> GPU (2 hops, 16 GB/s), and on a DGX-1 a direct NV1/NV2 link
// (1 hop) beats everything. A GPU is never an intermediate hop (its arcs out are dropped unless
// the route starts there) unless gpu_forwarding is set: NCCL and CUDA P2P do not relay through a
// third GPU by themselves. One Dijkstra per source fills the cache for every destination.
#include "sim/topology/topology.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/property_map.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace dtsim {

const char* to_string(DeviceKind kind)
{
  switch (kind) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::PcieSwitch: return "pcie-switch";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::NetworkSwitch: return "network-switch";
  }
  return "?";
}

const char* to_string(LinkKind kind)
{
  switch (kind) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::CpuInterconnect: return "cpu-interconnect";
    case LinkKind::Network: return "network";
  }
  return "?";
}

int Topology::add_device(std::string name, DeviceKind kind, int node, int local_index)
{
  if (by_name_.count(name))
    throw std::invalid_argument(fmt::format("duplicate device name \"{}\"", name));
  const int index = static_cast<int>(devices_.size());
  by_name_[name] = index;
  devices_.push_back(Device{std::move(name), kind, node, local_index});
  route_cache_.clear();
  routed_from_.clear();
  return index;
}

int Topology::add_link(std::string name, LinkKind kind, int a, int b, double bandwidth, double latency, int lanes)
{
  const int n = static_cast<int>(devices_.size());
  if (a < 0 || a >= n || b < 0 || b >= n || a == b)
    throw std::invalid_argument(fmt::format("link \"{}\" joins invalid devices {} and {}", name, a, b));
  const int index = static_cast<int>(links_.size());
  links_.push_back(Link{std::move(name), kind, a, b, bandwidth, latency, lanes});
  route_cache_.clear();
  routed_from_.clear();
  return index;
}

void Topology::add_gpu_rank(int device)
{
  if (device < 0 || device >= static_cast<int>(devices_.size()) || devices_[device].kind != DeviceKind::Gpu)
    throw std::invalid_argument(fmt::format("device {} is not a GPU", device));
  gpus_.push_back(device);
}

int Topology::device_index(const std::string& name) const
{
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

namespace {

struct Arc {
  double cost = 0;
  int link = -1;
  bool forward = true;
};
using RoutingGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Arc>;
using ArcDesc = boost::graph_traits<RoutingGraph>::edge_descriptor;

/// Keeps an arc unless it leaves a GPU other than the route's source (GPUs do not relay).
struct NoGpuTransit {
  const RoutingGraph* graph = nullptr;
  const std::vector<Device>* devices = nullptr;
  std::size_t source = 0;
  bool forwarding = false;
  bool operator()(const ArcDesc& e) const
  {
    const auto from = boost::source(e, *graph);
    return forwarding || from == source || (*devices)[from].kind != DeviceKind::Gpu;
  }
};

/// Remembers, for each vertex, the arc that last lowered its distance (its predecessor arc).
struct PredecessorArcs : boost::default_dijkstra_visitor {
  std::vector<ArcDesc>* via;
  std::vector<bool>* reached;
  template <class G>
  void edge_relaxed(const ArcDesc& e, const G& g)
  {
    const auto v = boost::target(e, g);
    (*via)[v] = e;
    (*reached)[v] = true;
  }
};

}  // namespace

void Topology::compute_routes_from(int from) const
{
  const std::size_t n = devices_.size();
  RoutingGraph graph(n);
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const Link& l = links_[i];
    const double cost = 1.0 + (l.bandwidth > 0 ? 1e7 / l.bandwidth : 1e9);
    boost::add_edge(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), Arc{cost, static_cast<int>(i), true}, graph);
    boost::add_edge(static_cast<std::size_t>(l.b), static_cast<std::size_t>(l.a), Arc{cost, static_cast<int>(i), false}, graph);
  }
  NoGpuTransit keep{&graph, &devices_, static_cast<std::size_t>(from), gpu_forwarding};
  boost::filtered_graph<RoutingGraph, NoGpuTransit> view(graph, keep);

  std::vector<double> distance(n, std::numeric_limits<double>::infinity());
  std::vector<ArcDesc> via(n);
  std::vector<bool> reached_by_arc(n, false);
  PredecessorArcs recorder;
  recorder.via = &via;
  recorder.reached = &reached_by_arc;
  boost::dijkstra_shortest_paths(
      view, static_cast<std::size_t>(from),
      boost::weight_map(boost::get(&Arc::cost, graph))
          .distance_map(boost::make_iterator_property_map(distance.begin(), boost::get(boost::vertex_index, graph)))
          .visitor(recorder));

  for (std::size_t to = 0; to < n; ++to) {
    if (static_cast<int>(to) == from || !reached_by_arc[to])
      continue;
    Route route;
    for (std::size_t v = to; v != static_cast<std::size_t>(from);) {
      const Arc& arc = graph[via[v]];
      route.push_back(Hop{arc.link, arc.forward});
      v = boost::source(via[v], graph);
    }
    std::reverse(route.begin(), route.end());
    route_cache_[{from, static_cast<int>(to)}] = std::move(route);
  }
  if (routed_from_.size() < n)
    routed_from_.resize(n, false);
  routed_from_[static_cast<std::size_t>(from)] = true;
}

const Route& Topology::route(int from, int to) const
{
  static const Route empty;
  const int n = static_cast<int>(devices_.size());
  if (from < 0 || from >= n || to < 0 || to >= n)
    throw std::out_of_range(fmt::format("route({}, {}): no such device", from, to));
  if (from == to)
    return empty;
  if (cached_forwarding_ != gpu_forwarding || cached_p2p_ != pcie_p2p) {
    route_cache_.clear();
    routed_from_.clear();
    cached_forwarding_ = gpu_forwarding;
    cached_p2p_ = pcie_p2p;
  }
  if (auto it = route_cache_.find({from, to}); it != route_cache_.end())
    return it->second;
  if (routed_from_.size() <= static_cast<std::size_t>(from) || !routed_from_[static_cast<std::size_t>(from)]) {
    compute_routes_from(from);
    if (!pcie_p2p && devices_[from].kind == DeviceKind::Gpu)
      stage_through_host(from);
  }
  if (auto it = route_cache_.find({from, to}); it != route_cache_.end())
    return it->second;
  throw std::runtime_error(fmt::format("no route from {} to {}{}", devices_[from].name, devices_[to].name,
                                       gpu_forwarding ? "" : " (GPUs do not forward traffic)"));
}

// Without PCIe P2P, the driver (cudaMemcpyPeer) and NCCL (SHM transport) copy through a host
// buffer: the data goes up to the GPU's own CPU socket and from there to the destination.
void Topology::stage_through_host(int from) const
{
  int home = -1;
  std::size_t home_hops = 0;
  for (int c = 0; c < static_cast<int>(devices_.size()); ++c) {
    if (devices_[c].kind != DeviceKind::Cpu)
      continue;
    auto it = route_cache_.find({from, c});
    if (it != route_cache_.end() && (home < 0 || it->second.size() < home_hops)) {
      home = c;
      home_hops = it->second.size();
    }
  }
  if (home < 0)
    return;
  const Route up = route_cache_.at({from, home});
  for (int to = 0; to < static_cast<int>(devices_.size()); ++to) {
    const DeviceKind kind = devices_[to].kind;
    if (to == from || (kind != DeviceKind::Gpu && kind != DeviceKind::Nic))
      continue;
    auto it = route_cache_.find({from, to});
    if (it == route_cache_.end())
      continue;
    const bool uses_nvlink = std::any_of(it->second.begin(), it->second.end(),
                                         [this](const Hop& h) { return links_[h.link].kind == LinkKind::NvLink; });
    if (uses_nvlink)
      continue;
    Route staged = up;
    const Route& down = route(home, to);
    staged.insert(staged.end(), down.begin(), down.end());
    it->second = std::move(staged);
  }
}

double Topology::route_bandwidth(const Route& route) const
{
  if (route.empty())
    return std::numeric_limits<double>::infinity();
  double bw = std::numeric_limits<double>::infinity();
  for (const Hop& hop : route)
    bw = std::min(bw, links_.at(static_cast<std::size_t>(hop.link)).bandwidth);
  return bw;
}

double Topology::route_latency(const Route& route) const
{
  double total = 0;
  for (const Hop& hop : route)
    total += links_.at(static_cast<std::size_t>(hop.link)).latency;
  return total;
}

int Topology::node_of(int rank) const
{
  return devices_.at(static_cast<std::size_t>(gpus_.at(static_cast<std::size_t>(rank)))).node;
}

std::vector<int> Topology::gpus_of_node(int node) const
{
  std::vector<int> out;
  for (int d : gpus_)
    if (devices_[static_cast<std::size_t>(d)].node == node)
      out.push_back(d);
  return out;
}

std::vector<int> Topology::nics_of_node(int node) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i)
    if (devices_[i].kind == DeviceKind::Nic && devices_[i].node == node)
      out.push_back(i);
  std::stable_sort(out.begin(), out.end(),
                   [this](int x, int y) { return devices_[x].local_index < devices_[y].local_index; });
  return out;
}

std::vector<int> Topology::devices_of_kind(DeviceKind kind) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i)
    if (devices_[i].kind == kind)
      out.push_back(i);
  return out;
}

int Topology::count_links(LinkKind kind) const
{
  return static_cast<int>(std::count_if(links_.begin(), links_.end(), [kind](const Link& l) { return l.kind == kind; }));
}

std::vector<int> Topology::links_between(int a, int b) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(links_.size()); ++i)
    if ((links_[i].a == a && links_[i].b == b) || (links_[i].a == b && links_[i].b == a))
      out.push_back(i);
  return out;
}

std::vector<int> Topology::links_of(int device) const
{
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(links_.size()); ++i)
    if (links_[i].a == device || links_[i].b == device)
      out.push_back(i);
  return out;
}

}  // namespace dtsim
