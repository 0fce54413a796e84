// Runs a TaskGraph on a Topology. The only module of dtsim that talks to SimGrid: each device is a
// host, each link a split-duplex link, each transfer a host-to-host comm over the route the
// topology computed, contending with the others by max-min sharing (CM02, no TCP effects).
#pragma once

#include "sim/engine/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <vector>

namespace dtsim {

/// Simulates the graph; returns one span per task (indexed like the graph). Each call runs SimGrid
/// in a forked child process (SimGrid allows one simulation per process), so it may be called
/// any number of times.
std::vector<Span> simulate(const Topology& topology, const TaskGraph& graph);

}  // namespace dtsim
