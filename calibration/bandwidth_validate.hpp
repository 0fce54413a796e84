// `dtsim validate` for bandwidth logs: each measured GPU-to-GPU bandwidth beside the bandwidth of
// the route between the same two GPUs of node 0 in the (calibrated) topology, and the median
// |error|, so a user sees how well the link model reproduces the measurement it was fitted to.
#pragma once

#include "calibration/bandwidth_logs.hpp"
#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim::calibration {

/// The table as text; InputError when the log has no GPU-to-GPU matrix or more GPUs than node 0.
std::string validate_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log,
                                   const std::string& file);

}  // namespace dtsim::calibration
