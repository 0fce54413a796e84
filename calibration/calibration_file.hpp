// The calibration file (JSON) that `dtsim calibrate` writes and topologies / scenarios accept.
// Schema (calibration/README.md, "The calibration file"):
//   {"dtsim_calibration": 1, "topology": "...", "nodes": N, "sources": [{"file", "format", ...}],
//    "links": {CLASS: {...}},   CLASS = nvlink | pcie | cpu_interconnect | network (applied to the
//                               topology's links of that kind) or host_via_cpu (informational)
//       "bandwidth_GBps_per_lane"  nvlink: per lane per direction (link = value x its lanes)
//       "bandwidth_GBps_per_pair"  nvlink: per GPU-side link whatever its lane count
//       "bandwidth_GBps"           other classes: per link per direction
//       "bandwidth_scale"          multiplies the (nominal or given) bandwidth
//       "latency_us"               per link
//       informational: bandwidth_GBps_by_lanes, copy_latency_us, duplex_efficiency, pairs, source, notes
//       legacy: "gbytes" = bandwidth_GBps_per_lane (nvlink) or bandwidth_GBps (others)
//    "nccl": {NcclParams members}, "host_device": {...}, "compute": {...}, "fit": {...}, "notes": [...],
//    "not_measured": [...],
//    "host": {"load_curve": [{"busy_fraction", "cost_ratio", ...}], ...}}   (host_load_curve.hpp)
// Links describe what the hardware delivers; "nccl" what NCCL's kernels reach on those links.
// Fragments from several fitters are merged (objects member by member, later wins).
#pragma once

#include "sim/collectives/nccl_params.hpp"
#include "sim/topology/topology.hpp"
#include "sim/util/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace dtsim {

struct CalibrationFile {
  nlohmann::json json = {{"dtsim_calibration", 1}};
  std::string path;  ///< where it was read from ("" when built in memory)

  /// Reads and checks a calibration file; throws InputError (file, JSON pointer, expectation).
  static CalibrationFile load(const std::string& path);
  /// Checks a document (as load does); throws InputError naming `path`.
  static void check(const nlohmann::json& doc, const std::string& path);
  /// Deep-merges a fragment (e.g. {"links": {...}} or {"nccl": {...}}) into this file.
  void merge(const nlohmann::json& fragment);
  /// The NCCL parameters for a GPU of compute capability `cc`: defaults, then the "nccl" section.
  NcclParams nccl_params(int compute_capability) const;
  /// Writes atomically (no partial file on failure).
  void write(const std::string& path) const;
};

/// Adjusts the topology's link bandwidths and latencies to the "links" section, and its host's load
/// curve to the "host" section.
void apply_calibration(Topology& topology, const CalibrationFile& calibration);

/// The calibration file a topology's cluster names (Topology::calibration: the "calibration" member of the
/// cluster or of the first file of its "base" chain that has one), loaded; the path is relative to the file
/// that names it, and a missing one is that file's error at the member. nullopt when none (presets name none).
std::optional<CalibrationFile> topology_calibration(const Topology& topology);

}  // namespace dtsim

#include "sim/collectives/collective_options.hpp"

namespace dtsim {

/// For the nccl-tests / calibrate / validate commands: the topology (preset or file, optional
/// node count) with the calibration file applied, and the collective options it implies (its NCCL
/// parameters). `calibration_path` may be empty (defaults). With `applied` (nccl-tests), a topology
/// file's own "calibration" is read, checked and applied when `calibration_path` is empty, and
/// `applied` is set to the path of the calibration applied (left alone when none).
Topology load_calibrated_topology(const std::string& topology, std::optional<int> nodes,
                                  const std::string& calibration_path, CollectiveOptions& options,
                                  std::string* applied = nullptr);

/// For a scenario's "cluster": the topology with the calibration file it names applied (links, host) and
/// its NCCL parameters in `options`; `applied` set to that file's path (left alone when it names none).
Topology build_calibrated_topology(const JsonReader& cluster, CollectiveOptions& options, std::string* applied);

}  // namespace dtsim
