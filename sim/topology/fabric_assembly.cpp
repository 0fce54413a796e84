// The network between nodes (see topology_assembly.hpp for the model).
#include "sim/topology/topology_assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

namespace {

/// A fat-tree leaf's NICs when the topology does not say: a 64-port switch with half its ports down
/// (HDR QM8700/QM8790 and NDR QM9700 have 40 and 64 ports; half down is non-blocking).
constexpr int kFatTreeNicsPerLeaf = 32;

std::vector<int> all_nics(const Topology& t, int nodes)
{
  std::vector<int> out;
  for (int n = 0; n < nodes; ++n)
    for (int nic : t.nics_of_node(n))
      out.push_back(nic);
  return out;
}

void connect_nic(Topology& t, const TopologySpec& s, int nic, int sw)
{
  t.add_link(fmt::format("{}-{}", t.device(nic).name, t.device(sw).name), LinkKind::Network, nic, sw,
             s.nic_bandwidth, s.nic_latency);
}

/// Joins leaves to one aggregate spine; each uplink carries `ports` NIC-rate ports / oversubscription.
void add_spine(Topology& t, const TopologySpec& s, const std::vector<int>& leaves, int ports)
{
  if (leaves.size() < 2)
    return;
  const int spine = t.add_device("fabric.spine", DeviceKind::NetworkSwitch, -1, 0);
  const double up_bw = ports * s.nic_bandwidth / s.oversubscription;
  const int lanes = std::max(1, static_cast<int>(std::lround(ports / s.oversubscription)));
  for (int leaf : leaves)
    t.add_link(fmt::format("{}-fabric.spine", t.device(leaf).name), LinkKind::Network, leaf, spine, up_bw,
               s.fabric_latency, lanes);
}

}  // namespace

void add_fabric(Topology& t, const TopologySpec& s)
{
  if (s.nodes < 2)
    return;
  const std::vector<int> nics = all_nics(t, s.nodes);
  switch (s.fabric) {
    case FabricKind::Switch: {
      const int sw = t.add_device("fabric.switch", DeviceKind::NetworkSwitch, -1, 0);
      for (int nic : nics)
        connect_nic(t, s, nic, sw);
      break;
    }
    case FabricKind::FatTree: {
      const int per_leaf = s.nics_per_leaf.value_or(kFatTreeNicsPerLeaf);
      const int n_leaves = (static_cast<int>(nics.size()) + per_leaf - 1) / per_leaf;
      std::vector<int> leaves;
      for (int l = 0; l < n_leaves; ++l)
        leaves.push_back(t.add_device(fmt::format("fabric.leaf{}", l), DeviceKind::NetworkSwitch, -1, l));
      for (std::size_t j = 0; j < nics.size(); ++j)
        connect_nic(t, s, nics[j], leaves[j / static_cast<std::size_t>(per_leaf)]);
      add_spine(t, s, leaves, per_leaf);
      break;
    }
    case FabricKind::RailOptimized: {
      // Rail i's leaf takes NIC i of nics_per_leaf nodes (one scalable unit: DGX SuperPOD's leaves),
      // or of every node when that is not given; every leaf goes up into the spine.
      const int per_leaf = std::min(s.nodes, s.nics_per_leaf.value_or(s.nodes));
      const int units = (s.nodes + per_leaf - 1) / per_leaf;
      std::vector<int> leaves;  // unit u's rail r at u * nics_per_node + r
      for (int u = 0; u < units; ++u)
        for (int r = 0; r < s.nics_per_node; ++r)
          leaves.push_back(t.add_device(units == 1 ? fmt::format("fabric.rail{}", r) : fmt::format("fabric.su{}.rail{}", u, r),
                                        DeviceKind::NetworkSwitch, -1, static_cast<int>(leaves.size())));
      // The NICs are listed before the links go in, since each new link clears the topology's index
      // (asking per node in the loop rebuilt it once per node).
      std::vector<std::vector<int>> node_nics;
      for (int n = 0; n < s.nodes; ++n)
        node_nics.push_back(t.nics_of_node(n));
      for (int n = 0; n < s.nodes; ++n)
        for (std::size_t i = 0; i < node_nics[static_cast<std::size_t>(n)].size(); ++i)
          connect_nic(t, s, node_nics[static_cast<std::size_t>(n)][i],
                      leaves[static_cast<std::size_t>(n / per_leaf * s.nics_per_node) + i]);
      add_spine(t, s, leaves, per_leaf);
      break;
    }
  }
}

}  // namespace dtsim
