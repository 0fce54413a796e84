// Structural checks of a built topology: it is one connected graph, every GPU reaches every other
// GPU (without relaying through a third GPU unless gpu_forwarding is set), every link has a
// positive, finite rate and a non-negative latency.
#pragma once

#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// Problems found, one sentence each; empty when the topology is sound.
std::vector<std::string> topology_problems(const Topology& topology);

}  // namespace dtsim
