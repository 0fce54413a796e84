#include "calibration/bandwidth_logs.hpp"
#include "sim/util/text_file.hpp"

#include "calibration/bandwidth_log_detail.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace dtsim::calibration {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool vector_set(const std::vector<double>& v)
{
  return std::any_of(v.begin(), v.end(), [](double x) { return has_value(x); });
}
}  // namespace

bool BandwidthMeasurements::empty() const
{
  for (const Matrix* m : {&p2p_connectivity, &unidir_p2p_GBps, &unidir_nop2p_GBps, &bidir_p2p_GBps,
                          &bidir_nop2p_GBps, &latency_p2p_us, &latency_nop2p_us, &cpu_latency_p2p_us,
                          &cpu_latency_nop2p_us})
    if (!m->empty())
      return false;
  for (const auto* v : {&h2d_pinned_GBps, &d2h_pinned_GBps, &h2d_pageable_GBps, &d2h_pageable_GBps, &d2d_GBps})
    if (vector_set(*v))
      return false;
  return topology.empty();
}

double median_of(std::vector<double> values)
{
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !has_value(v); }),
               values.end());
  if (values.empty())
    return kNaN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<double> off_diagonal(const Matrix& m)
{
  std::vector<double> out;
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < m[i].size(); ++j)
      if (i != j && has_value(m[i][j]))
        out.push_back(m[i][j]);
  return out;
}

namespace detail {

void RunCollector::claim(const std::string& format)
{
  if (current().format.empty())
    current().format = format;
}

Matrix& RunCollector::matrix_slot(Matrix BandwidthMeasurements::*member, const std::string& format)
{
  if (!(current().*member).empty())
    new_run();
  claim(format);
  return current().*member;
}

void RunCollector::set_per_gpu(std::vector<double> BandwidthMeasurements::*member, std::size_t gpu,
                               double value, const std::string& format)
{
  if (gpu > static_cast<std::size_t>(kMaxGpuIndex))
    throw InputError(file_, "", fmt::format("GPU index {} is out of range (expected 0..{})", gpu, kMaxGpuIndex));
  auto* v = &(current().*member);
  if (v->size() > gpu && has_value((*v)[gpu])) {
    new_run();
    v = &(current().*member);
  }
  claim(format);
  if (v->size() <= gpu)
    v->resize(gpu + 1, kNaN);
  (*v)[gpu] = value;
}

void RunCollector::new_run()
{
  if (!current().empty())
    runs_.emplace_back();
}

void RunCollector::note(const std::string& text)
{
  auto& notes = current().notes;
  if (std::find(notes.begin(), notes.end(), text) == notes.end())
    notes.push_back(text);
}

std::vector<BandwidthMeasurements> RunCollector::finish()
{
  std::vector<BandwidthMeasurements> out;
  for (auto& run : runs_)
    if (!run.empty())
      out.push_back(std::move(run));
  return out;
}

bool parse_number(const std::string& token, double& out)
{
  if (token.empty())
    return false;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size() || std::isnan(v) || std::isinf(v))
    return false;
  out = v;
  return true;
}

bool is_index(const std::string& token, int& out)
{
  if (token.empty() || token.size() > 4 || !std::all_of(token.begin(), token.end(), ::isdigit))
    return false;
  out = std::atoi(token.c_str());
  return true;
}

bool is_comment_or_blank(const std::string& line)
{
  const auto first = line.find_first_not_of(" \t\r");
  return first == std::string::npos || line[first] == '#';
}

std::string without_terminal_escapes(const std::string& line)
{
  // ECMA-48 control sequence: ESC [, parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, a
  // final byte 0x40-0x7E. nvidia-smi topo -m underlines its header row with ESC[4m ... ESC[0m, also
  // when its output goes to a file (driver 580), and logs pasted from a terminal keep colours.
  if (line.find('\x1b') == std::string::npos)
    return line;
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b' || i + 1 >= line.size() || line[i + 1] != '[') {
      out += line[i];
      continue;
    }
    std::size_t j = i + 2;
    while (j < line.size() && line[j] >= 0x20 && line[j] <= 0x3F)
      ++j;
    if (j < line.size() && line[j] >= 0x40 && line[j] <= 0x7E)
      i = j;   // the whole sequence dropped
    else
      out += line[i];   // not a complete sequence: kept as text
  }
  return out;
}

std::vector<std::string> log_lines(const std::string& text)
{
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back(without_terminal_escapes(line));
  }
  return lines;
}

}  // namespace detail

std::vector<BandwidthMeasurements> parse_bandwidth_log(const std::string& text, const std::string& file)
{
  detail::RunCollector runs(file);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    detail::read_bench_link_json(text, runs);
  } else {
    const auto lines = detail::log_lines(text);
    if (!detail::read_csv_table(lines, runs))
      detail::read_text_formats(lines, runs);
  }
  auto out = runs.finish();
  if (out.empty())
    throw InputError(file, "",
                     "no bandwidth measurement found (expected output of p2pBandwidthLatencyTest, nvbandwidth, "
                     "bandwidthTest, GPUInspector.jl, nvidia-smi topo -m, dtsim-bench-link, or a CSV table "
                     "with columns such as h2d_pinned_GBps)");
  return out;
}

std::vector<BandwidthMeasurements> load_bandwidth_log(const std::string& path)
{
  return parse_bandwidth_log(read_input_file(path, "a bandwidth log"), path);
}

}  // namespace dtsim::calibration
