// The measurement files `dtsim calibrate` accepts, told apart by content:
//   nccl-tests logs (and dtsim-bench-nccl output, possibly several tables in one file),
//   bandwidth logs (p2pBandwidthLatencyTest, nvbandwidth, bandwidthTest, GPUInspector, nvidia-smi
//   topo -m, CSV, dtsim-bench-link text or JSON), and compute profiles (dtsim-bench-compute,
//   profile_model.py JSON), and the host's load curve (host_costs.py JSON). Also the glue between the bandwidth fitter and the calibration file.
#pragma once

#include "calibration/bandwidth_fit.hpp"
#include "calibration/nccl_tests_log.hpp"
#include "sim/topology/topology.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::calibration {

enum class InputFormat { NcclTests, Bandwidth, ComputeProfile, HostCosts };
const char* to_string(InputFormat format);

/// The format of `text` (the content of `path`); InputError (exit 2) naming the file when it is
/// none of the accepted ones.
InputFormat detect_input_format(const std::string& text, const std::string& path);

/// Every nccl-tests table in `text` (a new table starts at a header line after data rows). Each
/// keeps the NCCL settings of its own lines (dtsim-bench-nccl prints NCCL_ALGO / NCCL_PROTO in
/// each table's header).
std::vector<NcclTestsLog> split_nccl_tests_tables(const std::string& text, const std::string& path);

/// Link class of every pair of GPUs of node 0 of `topology`, as the bandwidth fitter takes them:
/// NVLink (with the lane count of the narrowest NVLink hop) when the route is NVLink only, PCIe
/// peer-to-peer when the topology allows it, else through host memory.
PairClasses pair_classes_from_topology(const Topology& topology);

/// Turns fit_bandwidth's output into calibration-file sections ("links", "host_device", "fit",
/// "not_measured"): the measured copy latency becomes informational "copy_latency_us" (it holds the
/// copy call's own overhead), and when no PCIe peer pair was measured the pinned host<->device
/// bandwidth gives the PCIe class.
nlohmann::json links_fragment(const nlohmann::json& bandwidth_fit);

}  // namespace dtsim::calibration
