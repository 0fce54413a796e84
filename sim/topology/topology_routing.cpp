// Routes on the machine graph.
//
// The devices and full-duplex links become a directed Boost.Graph (one arc per direction of each
// link) and routes are Dijkstra shortest paths on it. The cost of crossing a link is
//     1 + 1e7 / bandwidth[bytes/s]
// i.e. routes are shortest in hops, and among routes with equally many hops the one with the
// higher bandwidth wins (for rates >= 1 GB/s the tie-break adds < 0.01 per hop, so it never buys a
// longer route). This is why, on an NVSwitch box, GPU -> NVSwitch -> GPU (2 hops, 300 GB/s) is
// chosen over GPU -> PCIe switch -> GPU (2 hops, 16 GB/s), and on a DGX-1 a direct NV1/NV2 link
// (1 hop) beats everything. A GPU is never an intermediate hop (its arcs out are dropped unless
// the route starts there) unless gpu_forwarding is set: NCCL and CUDA P2P do not relay through a
// third GPU by themselves.
//
// Without PCIe P2P (pcie_p2p false), the driver (cudaMemcpyPeer) and NCCL (SHM transport) copy
// through a host buffer: a route from a GPU to another GPU or to a NIC that uses no NVLink goes up
// to the GPU's own CPU socket (the nearest one) and from there to the destination.
//
// A node's devices carry only that node's own traffic: a route leaves its source's node, crosses
// the fabric and enters its destination's node, never a third node (hosts do not route for
// others; in the assembled fabrics a detour through a third node is never shorter anyway). So one
// Dijkstra per (source, destination node) runs on a graph of those two nodes and the fabric only
// (built for the call from per-node link lists, so its cost does not grow with the cluster), and keeps
// the hop each device it reached was reached by; routes are materialised and cached only for the
// pairs asked for. The work grows with the nodes a run talks to, not with the nodes the cluster
// has: 128 GPUs of a 1,000-node cluster cost about what they cost on 16 nodes.
//
// Nor with the fabric's size where the fabric is a tree: a switch whose other switches are one
// neighbour at most (a leaf hanging off its spine) is a dead end for every route that neither
// starts nor ends below it, since a shortest route is a simple path and hosts do not relay. Pruned
// repeatedly, such switches leave the fabric's core (empty for the assembled fat-tree and
// rail-optimized fabrics, whose leaves hang off one spine), and each pruned switch keeps the one
// neighbour it hung from. A call's graph is the core, the two nodes, and the chains from the
// switches the two nodes attach to up to the core: the same routes, whatever the fabric's size (a
// 1,024-node fat-tree of one NIC per leaf took 122 s with all 8,193 switches in every call).
#include "sim/topology/topology.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/property_map.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace dtsim {

namespace {

struct Arc {
  double cost = 0;
  int link = -1;
  bool forward = true;
};
using ArcGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, Arc>;
using ArcDesc = boost::graph_traits<ArcGraph>::edge_descriptor;

/// Keeps an arc unless it leaves a GPU other than the route's source: GPUs do not relay.
struct NoGpuTransit {
  const ArcGraph* graph = nullptr;
  const std::vector<Device>* devices = nullptr;
  const std::vector<int>* global = nullptr;  ///< device index per vertex
  std::size_t source = 0;
  bool forwarding = false;
  bool operator()(const ArcDesc& e) const
  {
    const auto from = boost::source(e, *graph);
    return forwarding || from == source || (*devices)[static_cast<std::size_t>((*global)[from])].kind != DeviceKind::Gpu;
  }
};

/// Records, for each vertex, the arc that last lowered its distance.
struct ArrivalRecorder : boost::default_dijkstra_visitor {
  std::unordered_map<int, Hop>* arrivals = nullptr;
  const std::vector<int>* global = nullptr;
  template <class G>
  void edge_relaxed(const ArcDesc& e, const G& g)
  {
    const Arc& arc = g[e];
    (*arrivals)[(*global)[boost::target(e, g)]] = Hop{arc.link, arc.forward};
  }
};

}  // namespace

/// Which links a route between two nodes may use, built once per change of the machine.
struct Topology::RoutingGraph {
  std::vector<std::vector<int>> links_of_node;  ///< per node: the links with an end in it, ascending
  std::vector<int> fabric_links;                ///< links between devices of no node, ascending
  std::vector<int> fabric_devices;              ///< devices of no node (switches), ascending
  std::vector<int> core_links;                  ///< links between two core switches, ascending
  std::vector<int> core_devices;                ///< switches of no node left after pruning (above), ascending
  /// Per device: for a pruned switch, the switch it hung from (-1: none) and the links to it.
  std::vector<int> hung_from;
  std::vector<std::vector<int>> links_up;
  std::vector<char> pruned;

  /// The fabric's switches and links, pruned of the switches that hang off one neighbour (above).
  void prune_fabric(const std::vector<Device>& devices, const std::vector<Link>& links);
};

void Topology::RoutingGraph::prune_fabric(const std::vector<Device>& devices, const std::vector<Link>& links)
{
  const std::size_t n = devices.size();
  std::vector<std::vector<int>> fabric_of(n);  // per switch: its fabric links
  for (std::size_t i = 0; i < links.size(); ++i)
    if (devices[static_cast<std::size_t>(links[i].a)].node < 0 && devices[static_cast<std::size_t>(links[i].b)].node < 0 &&
        links[i].a != links[i].b) {
      fabric_links.push_back(static_cast<int>(i));
      fabric_of[static_cast<std::size_t>(links[i].a)].push_back(static_cast<int>(i));
      fabric_of[static_cast<std::size_t>(links[i].b)].push_back(static_cast<int>(i));
    }
  const auto other = [&](int link, std::size_t d) {
    const Link& l = links[static_cast<std::size_t>(link)];
    return static_cast<std::size_t>(l.a) == d ? l.b : l.a;
  };
  hung_from.assign(n, -1);
  links_up.assign(n, {});
  pruned.assign(n, 0);
  // Per switch: its distinct neighbouring switches (parallel links count once), and how many of
  // them are not pruned yet.
  std::vector<std::vector<int>> neighbours(n);
  std::vector<std::size_t> live(n, 0);
  std::vector<std::size_t> queue;
  for (std::size_t d = 0; d < n; ++d) {
    if (devices[d].node >= 0)
      continue;
    for (const int link : fabric_of[d])
      neighbours[d].push_back(other(link, d));
    std::sort(neighbours[d].begin(), neighbours[d].end());
    neighbours[d].erase(std::unique(neighbours[d].begin(), neighbours[d].end()), neighbours[d].end());
    live[d] = neighbours[d].size();
    if (live[d] <= 1)
      queue.push_back(d);
  }
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::size_t d = queue[q];
    pruned[d] = 1;
    const auto up = std::find_if(neighbours[d].begin(), neighbours[d].end(),
                                 [&](int o) { return !pruned[static_cast<std::size_t>(o)]; });
    if (up == neighbours[d].end())
      continue;
    const auto parent = static_cast<std::size_t>(*up);
    hung_from[d] = *up;
    for (const int link : fabric_of[d])
      if (static_cast<std::size_t>(other(link, d)) == parent)
        links_up[d].push_back(link);
    if (--live[parent] == 1)  // (a switch queued at 0 or 1 live neighbours is queued once: it only goes down)
      queue.push_back(parent);
  }
  for (std::size_t d = 0; d < n; ++d)
    if (devices[d].node < 0) {
      fabric_devices.push_back(static_cast<int>(d));
      if (!pruned[d])
        core_devices.push_back(static_cast<int>(d));
    }
  for (const int link : fabric_links) {
    const Link& l = links[static_cast<std::size_t>(link)];
    if (!pruned[static_cast<std::size_t>(l.a)] && !pruned[static_cast<std::size_t>(l.b)])
      core_links.push_back(link);
  }
}

void Topology::reset_routes() const
{
  index_.reset();
  routing_graph_.reset();
  caches_.clear();
  pinned_.clear();
  cached_forwarding_ = gpu_forwarding;
  cached_p2p_ = pcie_p2p;
}

const std::unordered_map<int, Hop>& Topology::arrivals_from(int from, int to_node) const
{
  if (auto it = caches_.arrivals.find({from, to_node}); it != caches_.arrivals.end())
    return it->second;
  if (!routing_graph_) {
    auto built = std::make_shared<RoutingGraph>();
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const int ends[] = {devices_[static_cast<std::size_t>(links_[i].a)].node, devices_[static_cast<std::size_t>(links_[i].b)].node};
      for (int k = 0; k < 2; ++k) {
        if (ends[k] < 0 || (k == 1 && ends[1] == ends[0]))
          continue;
        if (static_cast<std::size_t>(ends[k]) >= built->links_of_node.size())
          built->links_of_node.resize(static_cast<std::size_t>(ends[k]) + 1);
        built->links_of_node[static_cast<std::size_t>(ends[k])].push_back(static_cast<int>(i));
      }
    }
    built->prune_fabric(devices_, links_);
    routing_graph_ = std::move(built);
  }
  const RoutingGraph& rg = *routing_graph_;
  // The graph of the two nodes, the fabric's core and the switches they hang from: their devices
  // in ascending order, their links' arcs in ascending link order (both as in one graph of the whole
  // machine, so that ties between equal routes fall the same way); a link into a third node is left out.
  // A route from or to a switch (topology show's, not a run's) takes the whole fabric.
  const int from_node = devices_[static_cast<std::size_t>(from)].node;
  const bool whole_fabric = from_node < 0 || to_node < 0;
  std::vector<int> global = whole_fabric ? rg.fabric_devices : rg.core_devices;
  std::vector<int> candidates = whole_fabric ? rg.fabric_links : rg.core_links;
  const auto hang = [&](int d) {  // a pruned switch and the chain it hangs from, up to the core
    for (; !whole_fabric && d >= 0 && rg.pruned[static_cast<std::size_t>(d)]; d = rg.hung_from[static_cast<std::size_t>(d)]) {
      global.push_back(d);
      candidates.insert(candidates.end(), rg.links_up[static_cast<std::size_t>(d)].begin(),
                        rg.links_up[static_cast<std::size_t>(d)].end());
    }
  };
  for (const int node : {from_node, to_node}) {
    const auto slot = static_cast<std::size_t>(node);
    if (node >= 0) {
      const std::vector<int> members = devices_of_node(node);
      global.insert(global.end(), members.begin(), members.end());
    }
    if (node >= 0 && slot < rg.links_of_node.size())
      for (const int i : rg.links_of_node[slot]) {
        candidates.push_back(i);
        for (const int end : {links_[static_cast<std::size_t>(i)].a, links_[static_cast<std::size_t>(i)].b})
          if (devices_[static_cast<std::size_t>(end)].node < 0)
            hang(end);
      }
  }
  std::sort(global.begin(), global.end());
  global.erase(std::unique(global.begin(), global.end()), global.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  auto vertex = [&global](int device) {  // its vertex in this graph, or -1
    const auto it = std::lower_bound(global.begin(), global.end(), device);
    return it != global.end() && *it == device ? static_cast<int>(it - global.begin()) : -1;
  };
  ArcGraph graph(global.size());
  for (const int i : candidates) {
    const Link& l = links_[static_cast<std::size_t>(i)];
    const int a = vertex(l.a), b = vertex(l.b);
    if (a < 0 || b < 0)
      continue;
    const double cost = 1.0 + (l.bandwidth > 0 ? 1e7 / l.bandwidth : 1e9);
    boost::add_edge(static_cast<std::size_t>(a), static_cast<std::size_t>(b), Arc{cost, i, true}, graph);
    boost::add_edge(static_cast<std::size_t>(b), static_cast<std::size_t>(a), Arc{cost, i, false}, graph);
  }
  const auto source = static_cast<std::size_t>(vertex(from));
  NoGpuTransit keep{&graph, &devices_, &global, source, gpu_forwarding};
  boost::filtered_graph<ArcGraph, NoGpuTransit> view(graph, keep);

  std::unordered_map<int, Hop> arrivals;
  std::vector<double> distance(global.size(), std::numeric_limits<double>::infinity());
  ArrivalRecorder recorder;
  recorder.arrivals = &arrivals;
  recorder.global = &global;
  boost::dijkstra_shortest_paths(
      view, source,
      boost::weight_map(boost::get(&Arc::cost, graph))
          .distance_map(boost::make_iterator_property_map(distance.begin(), boost::get(boost::vertex_index, graph)))
          .visitor(recorder));
  return caches_.arrivals.emplace(std::make_pair(from, to_node), std::move(arrivals)).first->second;
}

Route Topology::shortest_route(int from, int to) const
{
  const auto& arrivals = arrivals_from(from, devices_[static_cast<std::size_t>(to)].node);
  Route route;
  for (int v = to; v != from;) {
    const auto it = arrivals.find(v);
    const Hop hop = it == arrivals.end() ? Hop{-1, true} : it->second;
    if (hop.link < 0 || route.size() > devices_.size())
      throw std::runtime_error(fmt::format("no route from {} to {}{}", devices_[from].name, devices_[to].name,
                                           gpu_forwarding ? "" : " (GPUs do not forward traffic)"));
    route.push_back(hop);
    const Link& l = links_[static_cast<std::size_t>(hop.link)];
    v = hop.forward ? l.a : l.b;
  }
  std::reverse(route.begin(), route.end());
  return route;
}

namespace {
constexpr std::size_t kFewDestinations = 16;  ///< a source's routes kept in a list, scanned
}  // namespace

const Route* Topology::RouteCaches::find(int from, int to) const
{
  if (static_cast<std::size_t>(from) >= by_source.size())
    return nullptr;
  const FromOne& one = by_source[static_cast<std::size_t>(from)];
  if (one.few.size() < kFewDestinations) {
    for (const auto& [dst, route] : one.few)
      if (dst == to)
        return route;
    return nullptr;
  }
  const auto it = one.many.find(to);
  return it == one.many.end() ? nullptr : it->second;
}

const Route& Topology::RouteCaches::add(int from, int to, Route route)
{
  const Route& kept = routes.emplace_back(std::move(route));
  if (static_cast<std::size_t>(from) >= by_source.size())
    by_source.resize(static_cast<std::size_t>(from) + 1);
  FromOne& one = by_source[static_cast<std::size_t>(from)];
  if (one.few.size() < kFewDestinations) {
    one.few.emplace_back(to, &kept);
    if (one.few.size() == kFewDestinations)  // from now on every one is looked up in the hash map
      one.many.insert(one.few.begin(), one.few.end());
  } else {
    one.many.emplace(to, &kept);
  }
  return kept;
}

const Route& Topology::route(int from, int to) const
{
  static const Route empty;
  const int n = static_cast<int>(devices_.size());
  if (from < 0 || from >= n || to < 0 || to >= n)
    throw std::out_of_range(fmt::format("route({}, {}): no such device", from, to));
  if (from == to)
    return empty;
  if (cached_forwarding_ != gpu_forwarding || cached_p2p_ != pcie_p2p)
    reset_routes();
  auto& last = caches_.last;
  if (last.route && last.from == from && last.to == to)
    return *last.route;
  last = {from, to, nullptr};
  if (auto it = pinned_.find({from, to}); it != pinned_.end())
    return *(last.route = &it->second);
  if (const Route* known = caches_.find(from, to))
    return *(last.route = known);

  Route route = shortest_route(from, to);
  const DeviceKind to_kind = devices_[to].kind;
  const bool staged = !pcie_p2p && devices_[from].kind == DeviceKind::Gpu &&
                      (to_kind == DeviceKind::Gpu || to_kind == DeviceKind::Nic) &&
                      std::none_of(route.begin(), route.end(),
                                   [this](const Hop& h) { return links_[h.link].kind == LinkKind::NvLink; });
  if (staged) {  // up to the nearest socket of the GPU's own node (a route enters no third node)
    int home = -1;
    Route up;
    const auto& reached = arrivals_from(from, devices_[from].node);
    for (int c : devices_of_node(devices_[from].node)) {
      if (devices_[c].kind != DeviceKind::Cpu || !reached.count(c))
        continue;
      Route candidate = shortest_route(from, c);
      if (home < 0 || candidate.size() < up.size()) {
        home = c;
        up = std::move(candidate);
      }
    }
    if (home >= 0 && home != to) {
      const Route down = this->route(home, to);
      up.insert(up.end(), down.begin(), down.end());
      route = std::move(up);
    }
  }
  const Route& found = caches_.add(from, to, std::move(route));
  caches_.last = {from, to, &found};  // (the staged route above asked for another pair meanwhile)
  return found;
}

void Topology::pin_route(int from, int to, Route route)
{
  const int n = static_cast<int>(devices_.size());
  if (from < 0 || from >= n || to < 0 || to >= n || from == to)
    throw std::out_of_range(fmt::format("pin_route({}, {}): no such pair of devices", from, to));
  for (const Hop& hop : route)
    if (hop.link < 0 || hop.link >= static_cast<int>(links_.size()))
      throw std::out_of_range(fmt::format("pin_route({}, {}): no link {}", from, to, hop.link));
  if (cached_forwarding_ != gpu_forwarding || cached_p2p_ != pcie_p2p)
    reset_routes();
  pinned_[{from, to}] = std::move(route);
  caches_.last = {};
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

}  // namespace dtsim
