// The calibration file (JSON) that topologies and scenarios accept:
//   {"dtsim_calibration": 1, "topology": "...", "nodes": N, "sources": ["log", ...],
//    "links": {"nvlink"|"pcie"|"cpu_interconnect"|"network": {"gbytes": per lane/link per direction,
//              "bandwidth_scale": x, "latency_us": us}},
//    "nccl": {NcclParams members: efficiencies, hop_latency_scale, launch_overhead_us},
//    "host_device": {...}, "compute": {...}, "fit": {...quality...}}
// Links describe the hardware (line rates); "nccl" what NCCL's kernels reach on it.
// Fragments from several fitters are merged (objects member by member, later wins).
#pragma once

#include "sim/collectives/nccl_params.hpp"
#include "sim/topology/topology.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim {

struct CalibrationFile {
  nlohmann::json json = {{"dtsim_calibration", 1}};
  std::string path;  ///< where it was read from ("" when built in memory)

  /// Reads and checks a calibration file; throws InputError (file, JSON pointer, expectation).
  static CalibrationFile load(const std::string& path);
  /// Deep-merges a fragment (e.g. {"links": {...}} or {"nccl": {...}}) into this file.
  void merge(const nlohmann::json& fragment);
  /// The NCCL parameters for a GPU of compute capability `cc`: defaults, then the "nccl" section.
  NcclParams nccl_params(int compute_capability) const;
  /// Writes atomically (no partial file on failure).
  void write(const std::string& path) const;
};

/// Adjusts the topology's link bandwidths and latencies to the "links" section.
void apply_calibration(Topology& topology, const CalibrationFile& calibration);

}  // namespace dtsim

#include "sim/collectives/collective_options.hpp"

#include <optional>

namespace dtsim {

/// For the nccl-tests / calibrate / validate commands: the topology (preset or file, optional
/// node count) with the calibration file applied, and the collective options it implies (its NCCL
/// parameters). `calibration_path` may be empty (defaults).
Topology load_calibrated_topology(const std::string& topology, std::optional<int> nodes,
                                  const std::string& calibration_path, CollectiveOptions& options);

}  // namespace dtsim
