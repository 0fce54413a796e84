// Writes BandwidthMeasurements back out, in the text format p2pBandwidthLatencyTest prints (plus a
// "Host-Device Bandwidth (GB/s)" table and nvidia-smi-style topology), and as dtsim-bench-link
// JSON. dtsim-bench-link prints its results with these functions, so whatever it writes,
// parse_bandwidth_log reads back.
#pragma once

#include "calibration/bandwidth_logs.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::calibration {

/// p2pBandwidthLatencyTest-style text of every quantity that is set (matrices with N/A for NaN).
std::string format_bandwidth_report(const BandwidthMeasurements& m);

/// The "host_device" and "p2p" members of dtsim-bench-link's JSON (null for NaN); the caller adds
/// "tool", "machine" and its settings.
nlohmann::json bandwidth_to_json(const BandwidthMeasurements& m);

}  // namespace dtsim::calibration
