// Graphviz output through Boost's write_graphviz.
#include "sim/topology/topology_report.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>

#include <fmt/format.h>

#include <sstream>

namespace dtsim {

namespace {

const char* shape(DeviceKind kind)
{
  switch (kind) {
    case DeviceKind::Gpu: return "box";
    case DeviceKind::Cpu: return "ellipse";
    case DeviceKind::PcieSwitch: return "diamond";
    case DeviceKind::NvSwitch: return "octagon";
    case DeviceKind::Nic: return "cds";
    case DeviceKind::NetworkSwitch: return "hexagon";
  }
  return "ellipse";
}

const char* colour(LinkKind kind)
{
  switch (kind) {
    case LinkKind::NvLink: return "forestgreen";
    case LinkKind::Pcie: return "black";
    case LinkKind::CpuInterconnect: return "purple";
    case LinkKind::Network: return "blue";
  }
  return "black";
}

struct DeviceWriter {
  const Topology* t;
  template <class Vertex>
  void operator()(std::ostream& out, const Vertex& v) const
  {
    const Device& d = t->device(static_cast<int>(v));
    out << fmt::format("[label=\"{}\", shape={}]", d.name, shape(d.kind));
  }
};

struct LinkWriter {
  const Topology* t;
  const std::vector<int>* link_of_edge;
  template <class Edge>
  void operator()(std::ostream& out, const Edge& e) const
  {
    const Link& l = t->link((*link_of_edge)[boost::get(boost::edge_index, *graph, e)]);
    out << fmt::format("[label=\"{}\", color={}{}]", format_rate(l.bandwidth), colour(l.kind),
                       l.lanes > 1 && l.kind == LinkKind::NvLink ? fmt::format(", penwidth={}", std::min(l.lanes, 6)) : "");
  }
  const boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                              boost::property<boost::edge_index_t, int>>* graph;
};

}  // namespace

std::string topology_dot(const Topology& t)
{
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_index_t, int>>;
  Graph g(t.devices().size());
  std::vector<int> link_of_edge;
  for (int i = 0; i < static_cast<int>(t.links().size()); ++i) {
    const Link& l = t.link(i);
    boost::add_edge(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), static_cast<int>(link_of_edge.size()), g);
    link_of_edge.push_back(i);
  }
  std::ostringstream out;
  boost::write_graphviz(out, g, DeviceWriter{&t}, LinkWriter{&t, &link_of_edge, &g});
  return out.str();
}

}  // namespace dtsim
