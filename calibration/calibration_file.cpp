// Reading, checking, merging and writing the calibration file (schema: calibration_file.hpp).
#include "calibration/calibration_file.hpp"
#include "sim/util/number_text.hpp"

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

const std::vector<std::string> kSections = {"dtsim_calibration", "topology", "nodes", "sources", "links", "nccl",
                                            "host_device", "compute", "fit", "notes", "not_measured", "host"};
const std::vector<std::string> kLinkClasses = {"nvlink", "pcie", "cpu_interconnect", "network", "host_via_cpu"};
const std::vector<std::string> kLinkFields = {
    "bandwidth_GBps_per_lane", "bandwidth_GBps_per_pair", "bandwidth_GBps", "bandwidth_scale", "latency_us",
    "bandwidth_GBps_by_lanes", "copy_latency_us", "duplex_efficiency", "pairs", "source", "notes", "samples",
    "gbytes"};
/// The members NcclParams reads (follows nccl_params.* as it grows).
std::vector<std::string> nccl_fields()
{
  const nlohmann::json defaults = NcclParams::defaults(70).to_json();
  std::vector<std::string> out = {"hop_latency_scale_by_class", "net_hop_latency_scale_by_protocol"};  // when fitted
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    out.push_back(it.key());
  return out;
}

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

/// A link bandwidth (GB/s): at most 1e5, the bound of the measurement logs it is fitted from.
void check_gbps(const JsonReader& v)
{
  v.as_positive_at_most(1e5);
}

void check_links(const JsonReader& links)
{
  links.reject_unknown(kLinkClasses);
  for (const auto& [name, cls] : links.members()) {
    cls.reject_unknown(kLinkFields);
    const bool nvlink = name == "nvlink";
    for (const char* key : {"bandwidth_GBps_per_lane", "bandwidth_GBps_per_pair"})
      if (auto v = cls.find(key)) {
        if (!nvlink)
          v->fail(fmt::format("expected \"bandwidth_GBps\" for link class {} ({} is for nvlink)", name, key));
        check_gbps(*v);
      }
    if (auto v = cls.find("bandwidth_GBps")) {
      if (nvlink)
        v->fail("expected \"bandwidth_GBps_per_lane\" or \"bandwidth_GBps_per_pair\" for nvlink");
      check_gbps(*v);
    }
    if (auto v = cls.find("gbytes"))
      check_gbps(*v);
    if (auto v = cls.find("bandwidth_scale"))
      v->as_positive_at_most(100);
    if (auto by_lanes = cls.find("bandwidth_GBps_by_lanes"))  // informational, but of its documented form
      for (const auto& [lanes, gbps] : by_lanes->members()) {
        if (!parse_int(lanes, 1, 64))
          gbps.fail(fmt::format("expected a count of NVLink lanes 1..64 as the key, got \"{}\"", lanes));
        check_gbps(gbps);
      }
    if (auto v = cls.find("pairs"))
      v->as_int_in(0, 1 << 20);
    for (const char* key : {"latency_us", "copy_latency_us"})
      if (auto v = cls.find(key))
        v->as_non_negative();
  }
}

void check_compute(const JsonReader& compute)
{
  if (!compute.is_object())
    compute.fail("expected an object (the compute fragment of dtsim calibrate)");
  const auto layers = compute.find("layers");
  if (!layers)
    return;
  const auto model = compute.at("model");
  model.at("name").as_string();
  model.at("batch").as_count(1 << 24);
  if (auto o = model.find("optimizer_s"))
    o->as_non_negative();
  for (const auto& l : layers->items()) {
    l.at("name").as_string();
    l.at("fwd_s").as_non_negative();
    l.at("bwd_s").as_non_negative();
  }
}

/// The host's load curve (calibration/host_load_curve.hpp): points in order of the fraction of the
/// cores busy, each a cost ratio within a factor 100 of one busy core's.
void check_host(const JsonReader& host)
{
  if (!host.is_object())
    host.fail("expected an object (the host fragment of dtsim calibrate)");
  const auto curve = host.find("load_curve");
  if (!curve)
    return;
  double last = -1;
  for (const auto& p : curve->items()) {
    const auto u = p.at("busy_fraction");
    const double f = u.as_non_negative();
    if (f > 1)
      u.fail(fmt::format("expected a fraction of the cores from 0 to 1, got {}", u.json().dump()));
    if (f < last)
      u.fail(fmt::format("expected the points in order of busy_fraction, got {} after {}", f, last));
    last = f;
    const auto r = p.at("cost_ratio");
    if (r.as_positive() > 100 || r.as_positive() < 0.01)
      r.fail(fmt::format("expected a cost ratio from 0.01 to 100 (over one busy core's), got {}", r.json().dump()));
  }
  if (last < 0)
    curve->fail("expected at least one point {\"busy_fraction\", \"cost_ratio\"}");
}

/// A scale of NCCL's figures, within a factor 100 of NCCL's own tables, which no fit moves that far.
/// A rate scale must be positive (0 would stop the transfers); a latency scale may be 0 (the fit
/// rests a class's hop latency at that bound when its rows show none).
void check_scale(const JsonReader& v, bool rate)
{
  const double x = rate ? v.as_positive() : v.as_non_negative();
  if (x > 100)
    v.fail(fmt::format("expected a scale in {}0, 100], got {}", rate ? "(" : "[", v.json().dump()));
}

void check_nccl_member(const std::string& name, const JsonReader& v)
{
  if (name == "hop_latency_scale_by_class") {
    for (const auto& [cls, scale] : v.members()) {
      if (!parse_nccl_class(cls))
        scale.fail(fmt::format("expected an NCCL class such as \"Ring/LL128\", got \"{}\"", cls));
      check_scale(scale, false);
    }
  } else if (name == "net_hop_latency_scale_by_protocol") {
    for (const auto& [proto, scale] : v.members()) {
      if (!parse_nccl_proto(proto))
        scale.fail(fmt::format("expected an NCCL protocol (LL, LL128, Simple), got \"{}\"", proto));
      check_scale(scale, false);
    }
  } else if (name.find("efficiency") != std::string::npos) {
    const double e = v.as_positive();
    if (e > 1.5)
      v.fail(fmt::format("expected an efficiency in (0, 1.5], got {}", v.json().dump()));
  } else if (name.find("scale") != std::string::npos) {
    check_scale(v, name.find("rate") != std::string::npos);
  } else if (v.as_non_negative() > 1e6) {
    v.fail(fmt::format("expected at most 1e6 us, got {}", v.json().dump()));
  }
}

}  // namespace

void CalibrationFile::check(const nlohmann::json& doc, const std::string& path)
{
  const JsonReader root(doc, path);
  if (!root.is_object())
    root.fail("expected a JSON object (a dtsim calibration file)");
  if (root.at("dtsim_calibration").as_int() != 1)
    root.at("dtsim_calibration").fail("expected 1 (the calibration file format version)");
  root.reject_unknown(kSections);
  // The informational sections dtsim calibrate writes: not read, but of the type it writes them.
  if (auto v = root.find("topology"))
    v->as_string();
  if (auto v = root.find("nodes"))
    v->as_count(1 << 20);
  for (const char* list : {"sources", "not_measured"})
    if (auto v = root.find(list))
      v->items();
  for (const char* object : {"fit", "host_device"})
    if (auto v = root.find(object); v && !v->is_object())
      v->fail("expected an object (as dtsim calibrate writes it)");
  // The pageable copy rates are read (apply_calibration): a positive rate, below 1000 GB/s (the
  // fastest host link, a GH200's NVLink-C2C, carries 450 GB/s each way: NVIDIA's 900 GB/s in all).
  if (auto hd = root.find("host_device"))
    for (const char* key : {"h2d_pageable_GBps", "d2h_pageable_GBps"})
      if (auto v = hd->find(key); v && v->as_positive() > 1000)
        v->fail(fmt::format("expected GB/s of a host-device copy, at most 1000, got {}", v->json().dump()));
  if (auto links = root.find("links"))
    check_links(*links);
  if (auto nccl = root.find("nccl")) {
    static const std::vector<std::string> known = nccl_fields();
    nccl->reject_unknown(known);
    for (const auto& [name, v] : nccl->members())
      check_nccl_member(name, v);
  }
  if (auto compute = root.find("compute"))
    check_compute(*compute);
  if (auto host = root.find("host"))
    check_host(*host);
}

CalibrationFile CalibrationFile::load(const std::string& path)
{
  CalibrationFile c;
  c.path = path;
  c.json = load_json_file(path);
  check(c.json, path);
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

}  // namespace dtsim
