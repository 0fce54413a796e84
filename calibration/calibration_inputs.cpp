#include "calibration/calibration_inputs.hpp"

#include "calibration/bandwidth_logs.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace dtsim::calibration {

namespace {

bool is_table_header(const std::string& line)
{
  return line.rfind("# dtsim-bench-nccl", 0) == 0 || line.find("Collective test starting") != std::string::npos ||
         line.find("nThread") != std::string::npos || line.find("out-of-place") != std::string::npos ||
         (line.find("size") != std::string::npos && line.find("count") != std::string::npos);
}

}  // namespace

const char* to_string(InputFormat format)
{
  switch (format) {
    case InputFormat::NcclTests: return "nccl-tests";
    case InputFormat::Bandwidth: return "bandwidth";
    case InputFormat::ComputeProfile: return "compute profile";
    case InputFormat::HostCosts: return "host costs";
  }
  return "?";
}

InputFormat detect_input_format(const std::string& text, const std::string& path)
{
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const nlohmann::json doc = parse_json_text(text, path);
    const std::string tool = doc.is_object() && doc.contains("tool") && doc["tool"].is_string() ? doc["tool"].get<std::string>() : "";
    if (tool == "dtsim-bench-compute" || tool == "dtsim-profile-model")
      return InputFormat::ComputeProfile;
    if (tool == "dtsim-bench-link")
      return InputFormat::Bandwidth;
    if (tool == "dtsim-host-costs")
      return InputFormat::HostCosts;
    throw InputError(path, "/tool",
                     "unknown measurement format (expected \"tool\": dtsim-bench-link, dtsim-bench-compute, "
                     "dtsim-profile-model or dtsim-host-costs)");
  }
  if (looks_like_nccl_tests_log(text))
    return InputFormat::NcclTests;
  try {
    if (!parse_bandwidth_log(text, path).empty())
      return InputFormat::Bandwidth;
  } catch (const InputError& e) {
    // A file a bandwidth reader recognised but found wrong: its precise error, not "unknown format".
    if (e.problem().rfind("no bandwidth measurement found", 0) != 0)
      throw;
  }
  throw InputError(path, "",
                   "unknown measurement format (expected an nccl-tests / dtsim-bench-nccl log, a bandwidth log of "
                   "p2pBandwidthLatencyTest, nvbandwidth, bandwidthTest, GPUInspector or dtsim-bench-link, or a "
                   "dtsim-bench-compute / profile_model.py JSON)");
}

std::vector<NcclTestsLog> split_nccl_tests_tables(const std::string& text, const std::string& path)
{
  // A table is its header (nThread / size-count lines), its data rows and its footer (# Out of bounds, # Avg bus
  // bandwidth). What a run prints above its header (a transcript's `mpirun -x NCCL_ALGO=...` line, `export`, the
  // NCCL_DEBUG=INFO lines "NCCL_ALGO set by environment to ...") belongs to that run: when a header follows a table,
  // the lines after the previous table's last row or footer move with it. Only data rows count as rows, so a
  // preamble above the first header is not a table of its own.
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
  }
  std::vector<std::size_t> starts{0};  // first line of each chunk
  bool rows_seen = false;
  std::size_t after_table = 0;  // the line after the current table's last row or footer line
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const bool comment = line.empty() || line[0] == '#';
    if (comment && rows_seen && is_table_header(line)) {
      starts.push_back(after_table);
      rows_seen = false;
    }
    if (!comment && looks_like_nccl_tests_log(line)) {  // one line: true for a data row only
      rows_seen = true;
      after_table = i + 1;
    } else if (rows_seen && comment &&
               (line.find("Out of bounds") != std::string::npos || line.find("Avg bus bandwidth") != std::string::npos)) {
      after_table = i + 1;
    }
  }
  starts.push_back(lines.size());
  std::vector<std::string> tables;
  for (std::size_t c = 0; c + 1 < starts.size(); ++c) {
    std::string chunk(starts[c], '\n');  // errors keep the file's line numbers
    for (std::size_t i = starts[c]; i < starts[c + 1]; ++i)
      chunk += lines[i] + "\n";
    if (looks_like_nccl_tests_log(chunk))
      tables.push_back(std::move(chunk));
  }
  std::vector<NcclTestsLog> logs;
  for (std::size_t i = 0; i < tables.size(); ++i) {  // numbered 1..N among the tables
    const std::string name = tables.size() > 1 ? fmt::format("{} (table {})", path, i + 1) : path;
    logs.push_back(parse_nccl_tests_log(tables[i], name));
  }
  return logs;
}

PairClasses pair_classes_from_topology(const Topology& t)
{
  const std::vector<int> gpus = t.gpus_of_node(0);
  PairClasses out(gpus.size(), std::vector<std::optional<PairClass>>(gpus.size()));
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      if (i == j)
        continue;
      int lanes = 0;
      bool nvlink_only = true;
      for (const Hop& h : t.route(gpus[i], gpus[j])) {
        const Link& l = t.link(h.link);
        if (l.kind != LinkKind::NvLink)
          nvlink_only = false;
        else
          lanes = lanes == 0 ? l.lanes : std::min(lanes, l.lanes);
      }
      if (nvlink_only && lanes > 0)
        out[i][j] = PairClass{LinkClass::NvLink, lanes};
      else
        out[i][j] = PairClass{t.pcie_p2p ? LinkClass::Pcie : LinkClass::HostViaCpu, 0};
    }
  return out;
}

nlohmann::json links_fragment(const nlohmann::json& fit)
{
  nlohmann::json links = nlohmann::json::object();
  for (const auto& [cls, in] : fit.at("links").items()) {
    nlohmann::json j = in;
    if (j.contains("latency_us")) {
      j["copy_latency_us"] = j["latency_us"];
      j.erase("latency_us");
    }
    j["source"] = "bandwidth fit (" + fit.at("fit").value("source_format", std::string("?")) + ")";
    links[cls] = j;
  }
  const nlohmann::json hd = fit.value("host_device", nlohmann::json::object());
  if (!links.contains("pcie")) {
    std::vector<double> pinned;
    for (const char* k : {"h2d_pinned_GBps", "d2h_pinned_GBps"})
      if (hd.contains(k))
        pinned.push_back(hd.at(k).get<double>());
    if (!pinned.empty())
      links["pcie"] = {{"bandwidth_GBps", *std::max_element(pinned.begin(), pinned.end())},
                       {"source", "pinned host<->device copies (no PCIe peer pair measured)"}};
  }
  nlohmann::json out = {{"links", links}, {"host_device", hd}};
  if (fit.contains("not_measured") && !fit.at("not_measured").empty())
    out["not_measured"] = fit.at("not_measured");
  return out;
}

}  // namespace dtsim::calibration
