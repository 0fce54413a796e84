// Readers of the two structured inputs: CSV tables with named columns, dtsim-bench-link JSON.
#include "calibration/bandwidth_log_detail.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace dtsim::calibration::detail {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
using B = BandwidthMeasurements;

std::vector<std::string> split_csv(const std::string& line)
{
  return line.empty() ? std::vector<std::string>{} : split_trimmed(line, ',');
}

/// The per-GPU slot a CSV column fills; `memory` is the row's "memory" cell (pinned/pageable).
auto csv_slot(const std::string& column, const std::string& memory) -> std::vector<double> B::*
{
  const bool pageable = memory == "pageable";
  if (column == "h2d_pinned_GBps" || column == "host_to_device_memcpy_ce_GBps" ||
      column == "host_to_device_memcpy_sm_GBps")
    return &B::h2d_pinned_GBps;
  if (column == "d2h_pinned_GBps" || column == "device_to_host_memcpy_ce_GBps" ||
      column == "device_to_host_memcpy_sm_GBps")
    return &B::d2h_pinned_GBps;
  if (column == "h2d_pageable_GBps")
    return &B::h2d_pageable_GBps;
  if (column == "d2h_pageable_GBps")
    return &B::d2h_pageable_GBps;
  if (column == "h2d_GBps")
    return pageable ? &B::h2d_pageable_GBps : &B::h2d_pinned_GBps;
  if (column == "d2h_GBps")
    return pageable ? &B::d2h_pageable_GBps : &B::d2h_pinned_GBps;
  if (column == "d2d_GBps")
    return &B::d2d_GBps;
  return nullptr;
}

}  // namespace

bool read_csv_table(const std::vector<std::string>& lines, RunCollector& runs)
{
  std::size_t header = 0;
  while (header < lines.size() && is_comment_or_blank(lines[header]))
    ++header;
  if (header == lines.size() || lines[header].find(',') == std::string::npos)
    return false;
  const auto cols = split_csv(lines[header]);
  if (std::none_of(cols.begin(), cols.end(), [](const std::string& c) { return csv_slot(c, "") != nullptr; }))
    return false;
  for (std::size_t c = 0; c < cols.size(); ++c)
    if (!cols[c].empty() && std::find(cols.begin(), cols.begin() + static_cast<long>(c), cols[c]) != cols.begin() + static_cast<long>(c))
      throw InputError(runs.file(), "", fmt::format("line {}: column '{}' appears twice (expected each column once)",
                                                    header + 1, cols[c]));
  const auto col = [&](const char* name) {
    return static_cast<long>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  const long gpu_col = col("gpu"), system_col = col("system"), memory_col = col("memory");
  const long n = static_cast<long>(cols.size());
  // Rows with the same system/gpu cells form one run; the best value of each quantity is kept
  // (several rows of one GPU are transfer sizes or repeats).
  std::map<std::string, std::vector<std::pair<std::vector<double> B::*, double>>> best;
  std::map<std::string, std::string> gpu_of;
  std::vector<std::string> order;
  for (std::size_t k = header + 1; k < lines.size(); ++k) {
    if (is_comment_or_blank(lines[k]))
      continue;
    const auto cells = split_csv(lines[k]);
    if (static_cast<long>(cells.size()) != n)
      throw InputError(runs.file(), "", fmt::format("line {}: expected {} comma-separated cells like the header, found {}",
                                                    k + 1, n, cells.size()));
    std::string key = (system_col < n ? cells[system_col] + " / " : "") + (gpu_col < n ? cells[gpu_col] : "");
    if (!best.count(key))
      order.push_back(key);
    if (gpu_col < n)
      gpu_of[key] = cells[gpu_col];
    const std::string memory = memory_col < n ? cells[memory_col] : "";
    auto& values = best[key];
    for (long c = 0; c < n; ++c) {
      const auto slot = csv_slot(cols[c], memory);
      double v = 0;
      if (!slot || cells[c].empty())
        continue;
      if (!parse_number(cells[c], v) || v < 0 || v > kMaxLogValue)
        throw InputError(runs.file(), "", fmt::format("line {}: column '{}': expected a number from 0 to {:g}, found '{}'",
                                                      k + 1, cols[c], kMaxLogValue, cells[c]));
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& e) { return e.first == slot; });
      if (it == values.end())
        values.emplace_back(slot, v);
      else
        it->second = std::max(it->second, v);
    }
  }
  for (const auto& key : order) {
    runs.new_run();
    runs.current().label = key;
    if (gpu_of.count(key))
      runs.current().gpu_names = {gpu_of[key]};
    for (const auto& [slot, v] : best[key])
      runs.set_per_gpu(slot, 0, v, "csv");
  }
  return true;
}

namespace {

/// A value of a bandwidth or latency: from 0 to kMaxLogValue.
double measured_value(const JsonReader& r)
{
  const double v = r.as_non_negative();
  if (v > kMaxLogValue)
    r.fail(fmt::format("expected a value from 0 to {:g}, got {:g}", kMaxLogValue, v));
  return v;
}

Matrix read_json_matrix(const JsonReader& r)
{
  Matrix m;
  const auto rows = r.items();
  for (const auto& row : rows) {
    const auto cells = row.items();
    if (cells.size() != rows.size())
      row.fail(fmt::format("expected a row of {} entries (square matrix), found {}", rows.size(), cells.size()));
    std::vector<double> values;
    for (const auto& cell : cells)
      values.push_back(cell.json().is_null() ? kNaN : measured_value(cell));
    m.push_back(std::move(values));
  }
  return m;
}

}  // namespace

void read_bench_link_json(const std::string& text, RunCollector& runs)
{
  const nlohmann::json doc = parse_json_text(text, runs.file());
  const JsonReader root(doc, runs.file());
  if (root.string_or("tool", "") != "dtsim-bench-link")
    root.fail("expected \"tool\": \"dtsim-bench-link\" (the JSON written by dtsim-bench-link --json)");
  runs.current().format = "dtsim-bench-link";
  if (auto machine = root.find("machine")) {
    if (auto gpus = machine->find("gpus"))
      for (const auto& g : gpus->items())
        runs.current().gpu_names.push_back(g.at("name").as_string());
    if (auto topo = machine->find("topology_text"); topo && !topo->json().is_null())
      read_text_formats(log_lines(topo->as_string()), runs);
  }
  if (auto machine = root.find("machine"); machine && !machine->is_object())
    machine->fail("expected an object (gpus, topology_text)");
  if (auto host = root.find("host_device")) {
    for (const auto& row : host->items()) {
      const auto gpu = static_cast<std::size_t>(row.at("gpu").as_int_in(0, kMaxGpuIndex));
      for (const auto& [name, slot] : std::vector<std::pair<const char*, std::vector<double> B::*>>{
               {"h2d_pinned_GBps", &B::h2d_pinned_GBps},
               {"d2h_pinned_GBps", &B::d2h_pinned_GBps},
               {"h2d_pageable_GBps", &B::h2d_pageable_GBps},
               {"d2h_pageable_GBps", &B::d2h_pageable_GBps},
               {"d2d_GBps", &B::d2d_GBps}})
        if (auto v = row.find(name); v && !v->json().is_null())
          runs.set_per_gpu(slot, gpu, measured_value(*v), "dtsim-bench-link");
    }
  }
  if (auto p2p = root.find("p2p")) {
    if (!p2p->is_object())
      p2p->fail("expected an object of matrices (connectivity, unidirectional_p2p_GBps, ...)");
    for (const auto& [name, slot] : std::vector<std::pair<const char*, Matrix B::*>>{
             {"connectivity", &B::p2p_connectivity},
             {"unidirectional_p2p_GBps", &B::unidir_p2p_GBps},
             {"unidirectional_nop2p_GBps", &B::unidir_nop2p_GBps},
             {"bidirectional_p2p_GBps", &B::bidir_p2p_GBps},
             {"bidirectional_nop2p_GBps", &B::bidir_nop2p_GBps},
             {"latency_p2p_us", &B::latency_p2p_us},
             {"latency_nop2p_us", &B::latency_nop2p_us}})
      if (auto m = p2p->find(name))
        runs.current().*slot = read_json_matrix(*m);
  }
}

}  // namespace dtsim::calibration::detail
