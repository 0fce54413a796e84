#include "calibration/bandwidth_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace dtsim::calibration {

const char* to_string(LinkClass c)
{
  switch (c) {
  case LinkClass::NvLink: return "nvlink";
  case LinkClass::Pcie: return "pcie";
  case LinkClass::HostViaCpu: return "host_via_cpu";
  }
  return "?";
}

namespace {

std::size_t gpu_count(const BandwidthMeasurements& m)
{
  std::size_t n = 0;
  for (const Matrix* x : {&m.unidir_p2p_GBps, &m.unidir_nop2p_GBps, &m.p2p_connectivity, &m.latency_p2p_us})
    n = std::max(n, x->size());
  return std::max(n, m.topology.size());
}

double cell(const Matrix& m, std::size_t i, std::size_t j)
{
  return i < m.size() && j < m[i].size() ? m[i][j] : std::nan("");
}

bool no_peer_access(const BandwidthMeasurements& m, std::size_t i, std::size_t j)
{
  const double c = cell(m.p2p_connectivity, i, j);
  return has_value(c) && c == 0;
}

double median_of_vector(const std::vector<double>& v) { return median_of(v); }

void cluster(const BandwidthMeasurements& m, const FitOptions& o, PairClasses& classes)
{
  struct Cell { double bw; std::size_t i, j; };
  std::vector<Cell> cells;
  const Matrix& p2p = m.unidir_p2p_GBps;
  for (std::size_t i = 0; i < p2p.size(); ++i)
    for (std::size_t j = 0; j < p2p.size(); ++j)
      if (i != j && has_value(p2p[i][j]) && !no_peer_access(m, i, j))
        cells.push_back({p2p[i][j], i, j});
  std::sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) { return a.bw < b.bw; });
  std::vector<std::vector<Cell>> groups;
  for (const auto& c : cells) {
    if (groups.empty() || c.bw > groups.back().back().bw * o.cluster_gap)
      groups.emplace_back();
    groups.back().push_back(c);
  }
  double reference = median_of(off_diagonal(m.unidir_nop2p_GBps));
  if (!has_value(reference))
    reference = median_of_vector(m.h2d_pinned_GBps);
  const double threshold = has_value(reference) ? o.nvlink_over_pcie * reference : o.pcie_ceiling_GBps;
  std::vector<double> medians;
  for (const auto& g : groups) {
    std::vector<double> v;
    for (const auto& c : g)
      v.push_back(c.bw);
    medians.push_back(median_of(v));
  }
  const auto first_nvlink = static_cast<std::size_t>(
      std::find_if(medians.begin(), medians.end(), [&](double x) { return x > threshold; }) - medians.begin());
  const std::size_t nvlink_groups = groups.size() - first_nvlink;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    PairClass pc;
    if (g >= first_nvlink) {
      pc.link = LinkClass::NvLink;
      pc.lanes = nvlink_groups >= 2 ? std::max(1, static_cast<int>(std::lround(medians[g] / medians[first_nvlink]))) : 0;
    }
    for (const auto& c : groups[g])
      classes[c.i][c.j] = pc;
  }
}

struct Samples {
  std::vector<double> bw, per_lane, latency, duplex;
  std::map<int, std::vector<double>> by_lanes;
};

}  // namespace

Classification classify_pairs(const BandwidthMeasurements& m, const FitOptions& o)
{
  if (o.classes)
    return {*o.classes, "caller"};
  const std::size_t n = gpu_count(m);
  Classification out{PairClasses(n, std::vector<std::optional<PairClass>>(n)), "none"};
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j && no_peer_access(m, i, j))
        out.classes[i][j] = PairClass{LinkClass::HostViaCpu, 0};
  if (m.topology.size() == n && n > 1) {
    out.source = "topology";
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const std::string& label = m.topology[i][j];
        if (i == j || out.classes[i][j] || label == "X")
          continue;
        if (label.rfind("NV", 0) == 0)
          out.classes[i][j] = PairClass{LinkClass::NvLink, std::atoi(label.c_str() + 2)};
        else
          out.classes[i][j] = PairClass{LinkClass::Pcie, 0};
      }
  } else if (m.unidir_p2p_GBps.size() > 1) {
    out.source = "clustering";
    cluster(m, o, out.classes);
  }
  return out;
}

nlohmann::json fit_bandwidth(const BandwidthMeasurements& m, const FitOptions& o)
{
  const Classification cls = classify_pairs(m, o);
  const std::size_t n = cls.classes.size();
  std::map<LinkClass, Samples> s;
  const Matrix& uni = m.unidir_p2p_GBps;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const auto& pc = cls.classes[i][j];
      if (i == j || !pc)
        continue;
      Samples& x = s[pc->link];
      const double bw = cell(uni, i, j);
      if (has_value(bw)) {
        x.bw.push_back(bw);
        if (pc->lanes > 0) {
          x.per_lane.push_back(bw / pc->lanes);
          x.by_lanes[pc->lanes].push_back(bw);
        }
      }
      x.latency.push_back(cell(m.latency_p2p_us, i, j));
      const double back = cell(uni, j, i), bidir = cell(m.bidir_p2p_GBps, i, j);
      if (i < j && has_value(bw) && has_value(back) && has_value(bidir))
        x.duplex.push_back(bidir / (bw + back));
    }
  // Staged through host memory: the whole P2P=Disabled matrix measures that path.
  Samples& host = s[LinkClass::HostViaCpu];
  for (std::size_t i = 0; i < m.unidir_nop2p_GBps.size(); ++i)
    for (std::size_t j = 0; j < m.unidir_nop2p_GBps.size(); ++j) {
      const double bw = m.unidir_nop2p_GBps[i][j];
      if (i == j || !has_value(bw))
        continue;
      host.bw.push_back(bw);
      host.latency.push_back(cell(m.latency_nop2p_us, i, j));
      const double back = cell(m.unidir_nop2p_GBps, j, i), bidir = cell(m.bidir_nop2p_GBps, i, j);
      if (i < j && has_value(back) && has_value(bidir))
        host.duplex.push_back(bidir / (bw + back));
    }

  nlohmann::json links = nlohmann::json::object(), per_class = nlohmann::json::object();
  double sum_sq = 0;
  int points = 0;
  for (auto& [link, x] : s) {
    if (x.bw.empty())
      continue;
    nlohmann::json j;
    const bool lanes_known = link == LinkClass::NvLink && x.per_lane.size() == x.bw.size();
    const double per_lane = median_of(x.per_lane), pair_bw = median_of(x.bw);
    if (lanes_known) {
      j["bandwidth_GBps_per_lane"] = per_lane;
      for (const auto& [lanes, v] : x.by_lanes)
        j["bandwidth_GBps_by_lanes"][std::to_string(lanes)] = median_of(v);
    } else {
      j[link == LinkClass::NvLink ? "bandwidth_GBps_per_pair" : "bandwidth_GBps"] = pair_bw;
    }
    if (const double lat = median_of(x.latency); has_value(lat))
      j["latency_us"] = lat;
    if (const double d = median_of(x.duplex); has_value(d))
      j["duplex_efficiency"] = d;
    j["pairs"] = x.bw.size();
    // Residuals of every cell against the class model.
    double class_sq = 0;
    for (std::size_t k = 0; k < x.bw.size(); ++k) {
      const double predicted = lanes_known ? per_lane * (x.bw[k] / x.per_lane[k]) : pair_bw;
      const double rel = (x.bw[k] - predicted) / predicted;
      class_sq += rel * rel;
    }
    sum_sq += class_sq;
    points += static_cast<int>(x.bw.size());
    per_class[to_string(link)] = {{"points", x.bw.size()},
                                  {"rms_relative_error", std::sqrt(class_sq / static_cast<double>(x.bw.size()))}};
    links[to_string(link)] = j;
  }

  nlohmann::json hd = nlohmann::json::object();
  for (const auto& [name, v] : {std::pair{"h2d_pinned_GBps", &m.h2d_pinned_GBps},
                                std::pair{"d2h_pinned_GBps", &m.d2h_pinned_GBps},
                                std::pair{"h2d_pageable_GBps", &m.h2d_pageable_GBps},
                                std::pair{"d2h_pageable_GBps", &m.d2h_pageable_GBps},
                                std::pair{"d2d_GBps", &m.d2d_GBps}})
    if (const double med = median_of(*v); has_value(med))
      hd[name] = med;

  nlohmann::json not_measured = nlohmann::json::array();
  if (n <= 1)
    not_measured.push_back("GPU-to-GPU links: only one GPU in the measurement");
  else if (uni.empty() && m.unidir_nop2p_GBps.empty())
    not_measured.push_back("GPU-to-GPU bandwidth: no peer-to-peer matrix in the input");
  if (hd.empty())
    not_measured.push_back("host-device bandwidth: not in the input");
  if (n > 1 && m.latency_p2p_us.empty() && m.latency_nop2p_us.empty())
    not_measured.push_back("GPU-to-GPU latency: no latency matrix in the input");

  nlohmann::json out = {{"links", links}, {"host_device", hd}, {"not_measured", not_measured}};
  out["fit"] = {{"classification", cls.source},
                {"points", points},
                {"rms_relative_error", points ? std::sqrt(sum_sq / points) : 0.0},
                {"per_class", per_class},
                {"source_format", m.format}};
  return out;
}

BandwidthMeasurements merge_runs(const std::vector<BandwidthMeasurements>& runs)
{
  BandwidthMeasurements out;
  using B = BandwidthMeasurements;
  for (const auto& r : runs) {
    if (!r.format.empty() && out.format.find(r.format) == std::string::npos)
      out.format += (out.format.empty() ? "" : "+") + r.format;
    if (out.gpu_names.empty())
      out.gpu_names = r.gpu_names;
    if (out.topology.empty())
      out.topology = r.topology;
    for (Matrix B::*mat : {&B::p2p_connectivity, &B::unidir_p2p_GBps, &B::unidir_nop2p_GBps, &B::bidir_p2p_GBps,
                           &B::bidir_nop2p_GBps, &B::latency_p2p_us, &B::latency_nop2p_us, &B::cpu_latency_p2p_us,
                           &B::cpu_latency_nop2p_us})
      if ((out.*mat).empty())
        out.*mat = r.*mat;
    for (std::vector<double> B::*v : {&B::h2d_pinned_GBps, &B::d2h_pinned_GBps, &B::h2d_pageable_GBps,
                                      &B::d2h_pageable_GBps, &B::d2d_GBps})
      if (!has_value(median_of(out.*v)))
        out.*v = r.*v;
    out.notes.insert(out.notes.end(), r.notes.begin(), r.notes.end());
  }
  return out;
}

}  // namespace dtsim::calibration
