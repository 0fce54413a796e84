// `--trace FILE`: every simulated span as Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing). One track per GPU (compute, and the transfers it sends) and one per link
// direction (every transfer crossing it, with its bytes); spans that overlap on one track are laid
// out on numbered lanes so that each lane is a proper timeline.
#pragma once

#include "sim/engine/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

std::string chrome_trace(const Topology& topology, const TaskGraph& graph, const std::vector<Span>& spans);

}  // namespace dtsim
