#include "sim/topology/topology_check.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace dtsim {

namespace {

using UGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;

/// Component of every device, using only links accepted by `use`.
template <class Accept>
std::vector<int> components(const Topology& t, Accept use, int* count)
{
  UGraph g(t.devices().size());
  for (const Link& l : t.links())
    if (use(l))
      boost::add_edge(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), g);
  std::vector<int> comp(t.devices().size());
  *count = boost::connected_components(g, comp.data());
  return comp;
}

}  // namespace

std::vector<std::string> topology_problems(const Topology& t)
{
  std::vector<std::string> problems;
  if (t.gpus().empty())
    problems.push_back("the topology has no GPU");
  for (const Link& l : t.links()) {
    if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth))
      problems.push_back(fmt::format("link {} has bandwidth {} (expected a positive rate)", l.name, l.bandwidth));
    if (!(l.latency >= 0) || !std::isfinite(l.latency))
      problems.push_back(fmt::format("link {} has latency {} (expected >= 0)", l.name, l.latency));
  }
  if (t.devices().empty())
    return problems;

  int n_all = 0;
  const auto all = components(t, [](const Link&) { return true; }, &n_all);
  if (n_all > 1) {
    for (std::size_t d = 0; d < t.devices().size(); ++d)
      if (all[d] != all[0]) {
        problems.push_back(fmt::format("the graph is not connected: {} cannot reach {} ({} separate parts)",
                                       t.devices()[0].name, t.devices()[d].name, n_all));
        break;
      }
  }

  // GPU a reaches GPU b without a GPU in between iff they share a link, or both touch the same
  // component of the graph with the GPUs taken out.
  const auto is_gpu = [&t](int d) { return t.device(d).kind == DeviceKind::Gpu; };
  int n_fabric = 0;
  const auto fabric = components(t, [&](const Link& l) { return t.gpu_forwarding || (!is_gpu(l.a) && !is_gpu(l.b)); },
                                 &n_fabric);
  std::vector<std::set<int>> touches(t.devices().size());
  std::set<std::pair<int, int>> direct;
  for (const Link& l : t.links()) {
    if (is_gpu(l.a) && !is_gpu(l.b))
      touches[l.a].insert(fabric[l.b]);
    if (is_gpu(l.b) && !is_gpu(l.a))
      touches[l.b].insert(fabric[l.a]);
    direct.insert({std::min(l.a, l.b), std::max(l.a, l.b)});
  }
  for (int g : t.gpus())
    if (t.gpu_forwarding)
      touches[g].insert(fabric[g]);
  const auto& gpus = t.gpus();
  // Linear check first: a component every GPU touches (a node's switch, the network) joins every
  // pair, so the quadratic pair walk below only runs on topologies where it does not exist.
  std::vector<std::size_t> touching(static_cast<std::size_t>(n_fabric) + 1, 0);
  for (int g : gpus)
    for (int c : touches[g])
      if (c >= 0 && c < static_cast<int>(touching.size()) && ++touching[c] == gpus.size())
        return problems;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      const int a = gpus[i], b = gpus[j];
      if (direct.count({std::min(a, b), std::max(a, b)}))
        continue;
      bool shared = false;
      for (int c : touches[a])
        shared = shared || touches[b].count(c) > 0;
      if (!shared) {
        problems.push_back(fmt::format("GPU {} cannot reach GPU {}{}", t.device(a).name, t.device(b).name,
                                       t.gpu_forwarding ? "" : " without relaying through another GPU"));
        return problems;
      }
    }
  }
  return problems;
}

}  // namespace dtsim
