// The HTML report's memory chart: memory over one iteration of the GPU with the highest peak,
// stacked by kind as PyTorch's memory_viz draws a snapshot (Plan::memory_curve, memory_timeline.hpp).
#pragma once

#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim {

/// The section's HTML (a heading, a line, an SVG); empty without a curve. `capacity`: bytes per GPU.
std::string memory_section(const Plan& plan, const Topology& topology, double capacity);

}  // namespace dtsim
