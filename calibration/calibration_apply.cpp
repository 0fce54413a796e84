// Applying a calibration file: the topology's link figures by class, and where a cluster names it.
#include "calibration/calibration_file.hpp"

#include "sim/topology/topology_builder.hpp"
#include "sim/util/data_paths.hpp"
#include "sim/util/input_error.hpp"

#include <algorithm>
#include <filesystem>

namespace dtsim {

namespace {

const char* class_name(LinkKind kind)
{
  switch (kind) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::CpuInterconnect: return "cpu_interconnect";
    case LinkKind::Network: return "network";
  }
  return "?";
}

/// Bandwidth (bytes/s) of one link of class `c`, or the nominal one when the class gives none.
double link_bandwidth(const nlohmann::json& c, const Link& l)
{
  double bw = l.bandwidth;
  const bool nvlink = l.kind == LinkKind::NvLink;
  const double lanes = static_cast<double>(std::max(1, l.lanes));
  if (c.contains("bandwidth_GBps_per_lane"))
    bw = c.at("bandwidth_GBps_per_lane").get<double>() * 1e9 * lanes;
  else if (c.contains("bandwidth_GBps_per_pair"))
    bw = c.at("bandwidth_GBps_per_pair").get<double>() * 1e9;
  else if (c.contains("bandwidth_GBps"))
    bw = c.at("bandwidth_GBps").get<double>() * 1e9;
  else if (c.contains("gbytes"))  // legacy spelling
    bw = c.at("gbytes").get<double>() * 1e9 * (nvlink ? lanes : 1.0);
  if (c.contains("bandwidth_scale"))
    bw *= c.at("bandwidth_scale").get<double>();
  return bw;
}

/// A path as written in `file` (relative to that file's folder, else as given).
std::string beside(const std::string& ref, const std::string& file)
{
  namespace fs = std::filesystem;
  const fs::path p(ref);
  if (p.is_relative() && !file.empty()) {
    const fs::path candidate = fs::path(file).parent_path() / p;
    if (fs::exists(candidate))
      return candidate.string();
  }
  return ref;
}

/// The calibration file a cluster or topology file names at `c` (relative to that file's folder,
/// else the working directory): a missing one is the naming file's error, at the member.
CalibrationFile named_calibration(const Topology::FileReference& c)
{
  const std::string path = beside(c.value, c.file);
  require_referenced_file(path, c.value, c.file, c.pointer);
  return CalibrationFile::load(path);
}

}  // namespace

void apply_calibration(Topology& topology, const CalibrationFile& calibration)
{
  // The host's measured load curve (calibration/host_load_curve.hpp), by the fraction of the cores busy.
  if (calibration.json.contains("host") && calibration.json.at("host").contains("load_curve")) {
    topology.host.load_curve.clear();
    for (const auto& p : calibration.json.at("host").at("load_curve"))
      topology.host.load_curve.emplace_back(p.at("busy_fraction").get<double>(), p.at("cost_ratio").get<double>());
    topology.host.load_curve_source =
        "calibrated: " + (calibration.path.empty() ? std::string("the calibration file") : calibration.path);
  }
  // The host's measured pageable copy rates (bandwidthTest --memory=pageable, in host_device).
  if (calibration.json.contains("host_device")) {
    const auto& hd = calibration.json.at("host_device");
    for (const auto& [key, rate] : {std::pair{"h2d_pageable_GBps", &topology.host.pageable_h2d_bytes_per_s},
                                    std::pair{"d2h_pageable_GBps", &topology.host.pageable_d2h_bytes_per_s}})
      if (hd.contains(key) && hd.at(key).is_number())
        *rate = hd.at(key).get<double>() * 1e9;
  }
  if (!calibration.json.contains("links"))
    return;
  const auto& links = calibration.json.at("links");
  for (int i = 0; i < static_cast<int>(topology.links().size()); ++i) {
    const Link& l = topology.link(i);
    const char* cls = class_name(l.kind);
    if (!links.contains(cls))
      continue;
    const auto& c = links.at(cls);
    const double latency = c.contains("latency_us") ? c.at("latency_us").get<double>() * 1e-6 : l.latency;
    topology.set_link_rate(i, link_bandwidth(c, l), latency);
  }
}

std::optional<CalibrationFile> topology_calibration(const Topology& topology)
{
  if (topology.calibration)
    return named_calibration(*topology.calibration);
  return std::nullopt;
}

namespace {

/// Applies `cal` to the topology (links, host) and its NCCL parameters to `options`.
void apply_calibration_file(Topology& topology, const CalibrationFile& cal, CollectiveOptions& options)
{
  apply_calibration(topology, cal);
  options.params = cal.nccl_params(topology.gpu.compute_capability);
}

}  // namespace

Topology load_calibrated_topology(const std::string& name, std::optional<int> nodes, const std::string& calibration_path,
                                  CollectiveOptions& options, std::string* applied)
{
  Topology topology = load_topology(name, nodes);
  // A topology file's own "calibration" is read and checked as run reads a cluster's; applied where
  // the command asks (`applied`) and no --calibration replaces it.
  std::optional<CalibrationFile> cal;
  if (applied)
    cal = topology_calibration(topology);
  if (!calibration_path.empty())
    cal = CalibrationFile::load(calibration_path);
  if (cal) {
    apply_calibration_file(topology, *cal, options);
    if (applied)
      *applied = cal->path;
  }
  return topology;
}

Topology build_calibrated_topology(const JsonReader& cluster, CollectiveOptions& options, std::string* applied)
{
  Topology topology = build_topology(cluster);
  if (const auto cal = topology_calibration(topology)) {
    apply_calibration_file(topology, *cal, options);
    *applied = cal->path;
  }
  return topology;
}

}  // namespace dtsim
