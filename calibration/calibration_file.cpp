#include "calibration/calibration_file.hpp"

#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

const std::vector<std::string> kSections = {"dtsim_calibration", "topology", "nodes", "sources", "links", "nccl",
                                            "host_device", "compute", "fit", "notes"};
const std::vector<std::string> kLinkClasses = {"nvlink", "pcie", "cpu_interconnect", "network"};
const std::vector<std::string> kLinkFields = {"gbytes", "bandwidth_scale", "latency_us", "notes", "source", "samples"};
const std::vector<std::string> kNcclFields = {"nvlink_efficiency", "pcie_efficiency", "pcie_shm_efficiency",
                                              "network_efficiency", "nvls_efficiency", "hop_latency_scale",
                                              "launch_overhead_us"};

void merge_into(nlohmann::json& into, const nlohmann::json& from)
{
  if (!into.is_object() || !from.is_object()) {
    into = from;
    return;
  }
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (into.contains(it.key()))
      merge_into(into[it.key()], it.value());
    else
      into[it.key()] = it.value();
  }
}

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

}  // namespace

CalibrationFile CalibrationFile::load(const std::string& path)
{
  CalibrationFile c;
  c.path = path;
  c.json = load_json_file(path);
  const JsonReader root(c.json, path);
  if (!root.is_object())
    root.fail("expected a JSON object (a dtsim calibration file)");
  if (root.at("dtsim_calibration").as_int() != 1)
    root.at("dtsim_calibration").fail("expected 1 (the calibration file format version)");
  root.reject_unknown(kSections);
  if (auto links = root.find("links")) {
    links->reject_unknown(kLinkClasses);
    for (const auto& [name, cls] : links->members()) {
      cls.reject_unknown(kLinkFields);
      if (auto v = cls.find("gbytes"))
        v->as_positive();
      if (auto v = cls.find("bandwidth_scale"))
        v->as_positive();
      if (auto v = cls.find("latency_us"))
        v->as_non_negative();
    }
  }
  if (auto nccl = root.find("nccl")) {
    nccl->reject_unknown(kNcclFields);
    for (const auto& [name, v] : nccl->members())
      if (name.find("efficiency") != std::string::npos) {
        const double e = v.as_positive();
        if (e > 1.5)
          v.fail("expected an efficiency in (0, 1.5]");
      } else {
        v.as_non_negative();
      }
  }
  return c;
}

void CalibrationFile::merge(const nlohmann::json& fragment) { merge_into(json, fragment); }

NcclParams CalibrationFile::nccl_params(int cc) const
{
  NcclParams p = NcclParams::defaults(cc);
  if (json.contains("nccl"))
    p.override_from(json.at("nccl"));
  return p;
}

void CalibrationFile::write(const std::string& out) const { write_file_atomically(out, json.dump(2) + "\n"); }

void apply_calibration(Topology& topology, const CalibrationFile& calibration)
{
  if (!calibration.json.contains("links"))
    return;
  const auto& links = calibration.json.at("links");
  Topology rebuilt;
  rebuilt.name = topology.name;
  rebuilt.gpu = topology.gpu;
  rebuilt.nodes = topology.nodes;
  rebuilt.gpus_per_node = topology.gpus_per_node;
  rebuilt.gpu_forwarding = topology.gpu_forwarding;
  for (const auto& d : topology.devices())
    rebuilt.add_device(d.name, d.kind, d.node, d.local_index);
  for (const auto& l : topology.links()) {
    double bandwidth = l.bandwidth;
    double latency = l.latency;
    const char* cls = class_name(l.kind);
    if (links.contains(cls)) {
      const auto& c = links.at(cls);
      if (c.contains("gbytes"))
        bandwidth = c.at("gbytes").get<double>() * 1e9 * (l.kind == LinkKind::NvLink ? l.lanes : 1);
      if (c.contains("bandwidth_scale"))
        bandwidth *= c.at("bandwidth_scale").get<double>();
      if (c.contains("latency_us"))
        latency = c.at("latency_us").get<double>() * 1e-6;
    }
    rebuilt.add_link(l.name, l.kind, l.a, l.b, bandwidth, latency, l.lanes);
  }
  for (int g : topology.gpus())
    rebuilt.add_gpu_rank(g);
  topology = std::move(rebuilt);
}

}  // namespace dtsim

#include "sim/topology/topology_builder.hpp"

namespace dtsim {

Topology load_calibrated_topology(const std::string& name, std::optional<int> nodes, const std::string& calibration_path,
                                  CollectiveOptions& options)
{
  Topology topology = load_topology(name, nodes);
  if (!calibration_path.empty()) {
    const CalibrationFile cal = CalibrationFile::load(calibration_path);
    apply_calibration(topology, cal);
    options.params = cal.nccl_params(topology.gpu.compute_capability);
  }
  return topology;
}

}  // namespace dtsim
