// Turns a validated TopologySpec into the device/link graph.
//
// Design note: dtsim does not build SimGrid zones per topology kind. Everything, including the
// inter-node fabric (one switch, fat-tree leaves and spine, rail-optimised leaves), is expressed
// here as devices (NetworkSwitch) and Network links of one Topology graph; the engine maps every
// device to a SimGrid host/router and every link to a split-duplex link, and uses
// Topology::route() for every transfer. One graph is then the single source of truth for routes,
// checks, `topology show` and the simulation.
#pragma once

#include "sim/topology/topology.hpp"
#include "sim/topology/topology_spec.hpp"

namespace dtsim {

/// Adds node `node`'s CPU sockets, PCIe switches, NVSwitch, GPUs (appended to the rank order),
/// NVLinks and NICs. Names: n<node>.cpu<i>, n<node>.pcie<i>, n<node>.nvswitch, n<node>.gpu<i>,
/// n<node>.nic<i>.
void add_node(Topology& topology, const TopologySpec& spec, int node);

/// Joins the NICs of all nodes: "switch" = one fabric.switch; "fat-tree" = fabric.leaf<i> taking
/// nics_per_leaf NICs each (node-major order) and one aggregate fabric.spine; "rail-optimized" =
/// NIC i of every node into fabric.rail<i>, rails joined by one aggregate fabric.spine; with
/// nics_per_leaf, NIC i of each group of nics_per_leaf nodes (a scalable unit) into fabric.su<u>.rail<i>,
/// every such leaf into the spine.
/// The spine is one device standing for all spine switches with ideal ECMP: a leaf's uplink is
/// one link of nics_per_leaf x NIC rate / oversubscription (shortest-path routing over several
/// equal spines would pile every flow onto the first one).
void add_fabric(Topology& topology, const TopologySpec& spec);

}  // namespace dtsim
