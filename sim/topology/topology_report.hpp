// Human-readable views of a topology: the `dtsim topology show` text and Graphviz (dot) output.
#pragma once

#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim {

/// Devices, links by kind, per-GPU injection bandwidth, the node's path matrix (nvidia-smi topo -m
/// style), sample routes and the bisection bandwidth. Deterministic (golden-tested).
std::string topology_show(const Topology& topology);

/// Graphviz description of the graph (Boost write_graphviz), one vertex per device, one edge per link.
std::string topology_dot(const Topology& topology);

/// "15.75 GB/s" style rate (bytes/s in).
std::string format_rate(double bytes_per_s);

}  // namespace dtsim
