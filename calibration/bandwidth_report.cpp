#include "calibration/bandwidth_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dtsim::calibration {

namespace {

void matrix_text(std::string& out, const std::string& title, const char* corner, const Matrix& m, int decimals)
{
  if (m.empty())
    return;
  if (!title.empty())
    out += title + "\n";
  out += fmt::format("   {:>3}", corner);
  for (std::size_t j = 0; j < m.size(); ++j)
    out += fmt::format(" {:>7}", j);
  out += "\n";
  for (std::size_t i = 0; i < m.size(); ++i) {
    out += fmt::format("   {:>3}", i);
    for (double v : m[i])
      out += has_value(v) ? fmt::format(" {:>7.{}f}", v, decimals) : fmt::format(" {:>7}", "N/A");
    out += "\n";
  }
}

void latency_text(std::string& out, const std::string& title, const Matrix& gpu, const Matrix& cpu)
{
  matrix_text(out, title, "GPU", gpu, 2);
  if (!gpu.empty() && !cpu.empty()) {
    out += "\n";
    matrix_text(out, "", "CPU", cpu, 2);  // the CPU block has no title line of its own
  }
}

nlohmann::json matrix_json(const Matrix& m)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : m) {
    nlohmann::json r = nlohmann::json::array();
    for (double v : row)
      r.push_back(has_value(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
    rows.push_back(r);
  }
  return rows;
}

double at(const std::vector<double>& v, std::size_t i)
{
  return i < v.size() ? v[i] : std::numeric_limits<double>::quiet_NaN();
}

std::size_t host_rows(const BandwidthMeasurements& m)
{
  std::size_t n = 0;
  for (const auto* v : {&m.h2d_pinned_GBps, &m.d2h_pinned_GBps, &m.h2d_pageable_GBps, &m.d2h_pageable_GBps, &m.d2d_GBps})
    n = std::max(n, v->size());
  return n;
}

}  // namespace

std::string format_bandwidth_report(const BandwidthMeasurements& m)
{
  std::string out;
  for (std::size_t i = 0; i < m.gpu_names.size(); ++i)
    out += fmt::format("Device: {}, {}, pciBusID: n/a\n", i, m.gpu_names[i]);
  if (const auto n = host_rows(m)) {
    out += "Host-Device Bandwidth (GB/s)\n";
    out += fmt::format("   {:>3} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "GPU", "h2d_pinned", "d2h_pinned",
                       "h2d_pageable", "d2h_pageable", "d2d");
    for (std::size_t g = 0; g < n; ++g) {
      out += fmt::format("   {:>3}", g);
      for (const auto* v : {&m.h2d_pinned_GBps, &m.d2h_pinned_GBps, &m.h2d_pageable_GBps, &m.d2h_pageable_GBps, &m.d2d_GBps})
        out += has_value(at(*v, g)) ? fmt::format(" {:>12.2f}", at(*v, g)) : fmt::format(" {:>12}", "N/A");
      out += "\n";
    }
  }
  matrix_text(out, "P2P Connectivity Matrix", "D\\D", m.p2p_connectivity, 0);
  matrix_text(out, "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "D\\D", m.unidir_nop2p_GBps, 2);
  matrix_text(out, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "D\\D", m.unidir_p2p_GBps, 2);
  matrix_text(out, "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "D\\D", m.bidir_nop2p_GBps, 2);
  matrix_text(out, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "D\\D", m.bidir_p2p_GBps, 2);
  latency_text(out, "P2P=Disabled Latency Matrix (us)", m.latency_nop2p_us, m.cpu_latency_nop2p_us);
  latency_text(out, "P2P=Enabled Latency (P2P Writes) Matrix (us)", m.latency_p2p_us, m.cpu_latency_p2p_us);
  if (!m.topology.empty()) {
    out += "\t";
    for (std::size_t j = 0; j < m.topology.size(); ++j)
      out += fmt::format("GPU{}\t", j);
    out += "\n";
    for (std::size_t i = 0; i < m.topology.size(); ++i) {
      out += fmt::format("GPU{}", i);
      for (const auto& label : m.topology[i])
        out += "\t " + label;
      out += "\n";
    }
  }
  return out;
}

nlohmann::json bandwidth_to_json(const BandwidthMeasurements& m)
{
  nlohmann::json host = nlohmann::json::array();
  for (std::size_t g = 0; g < host_rows(m); ++g) {
    nlohmann::json row = {{"gpu", g}};
    for (const auto& [name, v] : {std::pair{"h2d_pinned_GBps", &m.h2d_pinned_GBps},
                                  std::pair{"d2h_pinned_GBps", &m.d2h_pinned_GBps},
                                  std::pair{"h2d_pageable_GBps", &m.h2d_pageable_GBps},
                                  std::pair{"d2h_pageable_GBps", &m.d2h_pageable_GBps},
                                  std::pair{"d2d_GBps", &m.d2d_GBps}})
      row[name] = has_value(at(*v, g)) ? nlohmann::json(at(*v, g)) : nlohmann::json(nullptr);
    host.push_back(row);
  }
  nlohmann::json p2p = nlohmann::json::object();
  for (const auto& [name, mat] : {std::pair{"connectivity", &m.p2p_connectivity},
                                  std::pair{"unidirectional_p2p_GBps", &m.unidir_p2p_GBps},
                                  std::pair{"unidirectional_nop2p_GBps", &m.unidir_nop2p_GBps},
                                  std::pair{"bidirectional_p2p_GBps", &m.bidir_p2p_GBps},
                                  std::pair{"bidirectional_nop2p_GBps", &m.bidir_nop2p_GBps},
                                  std::pair{"latency_p2p_us", &m.latency_p2p_us},
                                  std::pair{"latency_nop2p_us", &m.latency_nop2p_us}})
    if (!mat->empty())
      p2p[name] = matrix_json(*mat);
  return {{"host_device", host}, {"p2p", p2p}};
}

}  // namespace dtsim::calibration
