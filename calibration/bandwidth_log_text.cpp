// Readers of the text formats: p2pBandwidthLatencyTest / dtsim-bench-link, nvbandwidth,
// bandwidthTest, GPUInspector.jl, nvidia-smi topo -m.
#include "calibration/bandwidth_log_detail.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <regex>

namespace dtsim::calibration::detail {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kGiB = 1.073741824;  // GiB/s -> GB/s

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

/// The most NVLinks between two GPUs nvidia-smi names (NV18: H100 SXM's 18 links to an NVSwitch
/// fabric); 64 leaves room.
constexpr int kMaxNvLinks = 64;

/// A cell of nvidia-smi topo -m's GPU matrix: X (itself), NV# (# NVLinks), or a PCIe path.
bool topo_label(const std::string& label)
{
  if (label.rfind("NV", 0) == 0)
    return parse_int(std::string_view(label).substr(2), 1, kMaxNvLinks).has_value();
  for (const char* known : {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})
    if (label == known)
      return true;
  return false;
}

class TextReader {
public:
  TextReader(const std::vector<std::string>& lines, RunCollector& runs) : lines_(lines), runs_(runs) {}
  void run();

private:
  const std::vector<std::string>& lines_;
  RunCollector& runs_;
  std::size_t pos_ = 0;
  int bt_device_ = 0;                       // bandwidthTest: current device
  std::string bt_direction_, bt_memory_;    // "h2d" | "d2h" | "d2d", "pinned" | "pageable"
  std::string gi_target_;                   // GPUInspector: what the next NxN matrix is

  [[noreturn]] void fail(std::size_t line, const std::string& what) const
  {
    throw InputError(runs_.file(), "", fmt::format("line {}: {}", line + 1, what));
  }
  std::size_t next_nonblank(std::size_t from) const
  {
    while (from < lines_.size() && is_comment_or_blank(lines_[from]))
      ++from;
    return from;
  }
  /// Index-labelled matrix (header "D\D 0 1 2", rows "i v v v") starting at the header line.
  /// Returns the number of columns; 0 when the line is not such a header.
  Matrix read_indexed_matrix(std::size_t header, std::size_t& after, double scale) const;
  void store_matrix(Matrix BandwidthMeasurements::*slot, Matrix m, const std::string& format, bool transpose = false);
  bool p2p_title(const std::string& line);
  bool nvbandwidth_title(const std::string& line);
  bool bandwidth_test_line(const std::string& line);
  bool gpuinspector_line(const std::string& line);
  bool topo_header(const std::string& line);
  bool bench_link_host_table(const std::string& line);
};

Matrix TextReader::read_indexed_matrix(std::size_t header, std::size_t& after, double scale) const
{
  after = header;
  if (header >= lines_.size())
    return {};
  auto head = split_ws(lines_[header]);
  std::size_t skip = 0;
  int idx = 0;
  while (skip < head.size() && !is_index(head[skip], idx))
    ++skip;
  const std::size_t n = head.size() - skip;
  for (std::size_t k = skip; k < head.size(); ++k)
    if (!is_index(head[k], idx) || idx != static_cast<int>(k - skip))
      return {};
  if (n == 0)
    return {};
  Matrix m;
  std::size_t line = header + 1;
  for (; line < lines_.size(); ++line) {
    auto t = split_ws(lines_[line]);
    int row = 0;
    if (t.size() != n + 1 || !is_index(t[0], row) || row != static_cast<int>(m.size()))
      break;
    std::vector<double> values(n, kNaN);
    for (std::size_t c = 0; c < n; ++c) {
      double v = 0;
      if (parse_number(t[c + 1], v) && (v < 0 || v * scale > kMaxLogValue))
        fail(line, fmt::format("expected a value from 0 to {:g} in column {}, found '{}'", kMaxLogValue, c, t[c + 1]));
      if (parse_number(t[c + 1], v))
        values[c] = v * scale;
      else if (t[c + 1] != "N/A" && t[c + 1] != "nothing" && t[c + 1] != "X")
        fail(line, fmt::format("expected a number or N/A in column {}, found '{}'", c, t[c + 1]));
    }
    m.push_back(std::move(values));
  }
  after = line;
  return m;
}

void TextReader::store_matrix(Matrix BandwidthMeasurements::*slot, Matrix m, const std::string& format, bool transpose)
{
  if (m.empty())
    return;
  if (m.size() != m[0].size())
    fail(pos_, fmt::format("expected a square matrix of GPUs, found {} rows of {} columns", m.size(), m[0].size()));
  if (std::none_of(m.begin(), m.end(), [](const std::vector<double>& row) {
        return std::any_of(row.begin(), row.end(), [](double v) { return has_value(v); });
      }))
    return;  // only N/A: nothing measured (no run of its own)
  if (transpose && m.size() == m[0].size())
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = i + 1; j < m.size(); ++j)
        std::swap(m[i][j], m[j][i]);
  runs_.matrix_slot(slot, format) = std::move(m);
}

bool TextReader::p2p_title(const std::string& line)
{
  using B = BandwidthMeasurements;
  Matrix B::*slot = nullptr;
  Matrix B::*cpu_slot = nullptr;
  const bool enabled = contains(line, "P2P=Enabled");
  if (contains(line, "P2P Connectivity Matrix"))
    slot = &B::p2p_connectivity;
  else if (!enabled && !contains(line, "P2P=Disabled"))
    return false;
  else if (contains(line, "Unidirectional") && contains(line, "Bandwidth"))
    slot = enabled ? &B::unidir_p2p_GBps : &B::unidir_nop2p_GBps;
  else if (contains(line, "Bidirectional") && contains(line, "Bandwidth"))
    slot = enabled ? &B::bidir_p2p_GBps : &B::bidir_nop2p_GBps;
  else if (contains(line, "Latency")) {
    slot = enabled ? &B::latency_p2p_us : &B::latency_nop2p_us;
    cpu_slot = enabled ? &B::cpu_latency_p2p_us : &B::cpu_latency_nop2p_us;
  } else
    return false;
  std::size_t after = 0;
  auto m = read_indexed_matrix(next_nonblank(pos_ + 1), after, 1.0);
  if (m.empty())
    fail(pos_ + 1, "expected a matrix header (D\\D 0 1 ...) after '" + line + "'");
  store_matrix(slot, std::move(m), "p2pBandwidthLatencyTest");
  pos_ = after - 1;  // the loop's ++ lands on the first line after the matrix
  if (cpu_slot) {
    const std::size_t cpu = next_nonblank(after);
    if (cpu < lines_.size() && split_ws(lines_[cpu]).front() == "CPU") {
      auto c = read_indexed_matrix(cpu, after, 1.0);
      store_matrix(cpu_slot, std::move(c), "p2pBandwidthLatencyTest");
      pos_ = after - 1;
    }
  }
  return true;
}

bool TextReader::nvbandwidth_title(const std::string& line)
{
  static const std::regex title(R"(memcpy (CE|SM) (CPU|GPU)\(row\) (->|<-|<->) GPU\(column\) bandwidth \(GB/s\))");
  std::smatch m;
  if (!std::regex_search(line, m, title))
    return false;
  const bool sm = m[1] == "SM", cpu = m[2] == "CPU";
  const std::string dir = m[3];
  std::size_t after = 0;
  auto matrix = read_indexed_matrix(next_nonblank(pos_ + 1), after, 1.0);
  pos_ = std::max(after, pos_ + 1) - 1;
  if (matrix.empty())
    return true;  // e.g. a truncated excerpt
  if (sm)
    runs_.note("nvbandwidth SM copies (kernel loads/stores), not copy-engine memcpy");
  using B = BandwidthMeasurements;
  if (!cpu) {
    if (dir == "<->")
      store_matrix(&B::bidir_p2p_GBps, std::move(matrix), "nvbandwidth");
    else
      store_matrix(&B::unidir_p2p_GBps, std::move(matrix), "nvbandwidth", dir == "<-");
    return true;
  }
  if (dir == "<->")
    return true;  // host bidirectional: both directions share the link; not used by the fitter
  const auto slot = dir == "->" ? &B::h2d_pinned_GBps : &B::d2h_pinned_GBps;
  for (std::size_t g = 0; g < matrix[0].size(); ++g)
    if (has_value(matrix[0][g]))
      runs_.set_per_gpu(slot, g, matrix[0][g], "nvbandwidth");
  return true;
}

bool TextReader::bandwidth_test_line(const std::string& line)
{
  static const std::regex device(R"(^\s*Device (\d+): (.+?)\s*$)");
  std::smatch m;
  if (std::regex_search(line, m, device)) {
    const auto d = parse_int(m[1].str(), 0, kMaxGpuIndex);
    if (!d)
      fail(pos_, fmt::format("expected a device index 0..{}, found '{}'", kMaxGpuIndex, m[1].str()));
    bt_device_ = static_cast<int>(*d);
    auto& names = runs_.current().gpu_names;
    if (names.size() <= static_cast<std::size_t>(bt_device_))
      names.resize(bt_device_ + 1);
    names[bt_device_] = m[2];
    return true;
  }
  if (contains(line, "Host to Device Bandwidth,"))
    bt_direction_ = "h2d";
  else if (contains(line, "Device to Host Bandwidth,"))
    bt_direction_ = "d2h";
  else if (contains(line, "Device to Device Bandwidth,"))
    bt_direction_ = "d2d";
  else if (contains(line, "PINNED Memory Transfers"))
    bt_memory_ = "pinned";
  else if (contains(line, "PAGEABLE Memory Transfers"))
    bt_memory_ = "pageable";
  else if (contains(line, "Transfer Size (Bytes)") && !bt_direction_.empty()) {
    const double scale = contains(line, "MB/s") ? 1e-3 : 1.0;
    double best_size = -1, value = kNaN;
    std::size_t k = pos_ + 1;
    for (; k < lines_.size(); ++k) {
      auto t = split_ws(lines_[k]);
      double size = 0, bw = 0;
      if (t.size() != 2 || !parse_number(t[0], size) || !parse_number(t[1], bw))
        break;
      if (!(size > 0) || !(bw > 0) || bw * scale > kMaxLogValue)
        fail(k, fmt::format("expected a transfer size > 0 and a bandwidth from 0 to {:g} GB/s, found '{}' '{}'",
                            kMaxLogValue, t[0], t[1]));
      if (size > best_size)
        best_size = size, value = bw * scale;   // the largest transfer is the steady state
    }
    if (scale != 1.0)
      runs_.note("bandwidthTest printed MB/s; read as 1e6 bytes/s");
    using B = BandwidthMeasurements;
    std::vector<double> B::*slot = &B::d2d_GBps;
    if (bt_direction_ == "h2d")
      slot = bt_memory_ == "pageable" ? &B::h2d_pageable_GBps : &B::h2d_pinned_GBps;
    else if (bt_direction_ == "d2h")
      slot = bt_memory_ == "pageable" ? &B::d2h_pageable_GBps : &B::d2h_pinned_GBps;
    if (has_value(value))
      runs_.set_per_gpu(slot, static_cast<std::size_t>(bt_device_), value, "bandwidthTest");
    pos_ = k - 1;
  } else
    return false;
  return true;
}

bool TextReader::gpuinspector_line(const std::string& line)
{
  using B = BandwidthMeasurements;
  static const std::regex shape(R"(^\s*(\d+)\s*(?:×|_|x)\s*(\d+)\s+Matrix\{)");
  std::smatch m;
  if (contains(line, "julia>")) {
    gi_target_ = contains(line, "p2p_bandwidth_bidirectional_all") ? "bidir"
                 : contains(line, "p2p_bandwidth_all")             ? "unidir"
                                                                   : "";
    return true;
  }
  if (contains(line, "P2P Access Supported:")) {
    gi_target_ = "access";
    return true;
  }
  if (contains(line, "P2P Atomic Supported:")) {
    gi_target_ = "";
    return true;
  }
  if (contains(line, "<-> Device Bandwidth (GiB/s):")) {
    const std::size_t k = pos_ + 1;
    static const std::regex max_line(R"(max:\s*([0-9.eE+-]+))");
    std::smatch v;
    if (k < lines_.size() && std::regex_search(lines_[k], v, max_line)) {
      const bool pinned = contains(line, "(pinned)");
      const auto gibps = parse_double(v[1].str());
      if (!gibps || !(*gibps > 0) || *gibps * kGiB > kMaxLogValue)
        fail(k, fmt::format("expected a bandwidth from 0 to {:g} GiB/s after 'max:', found '{}'", kMaxLogValue / kGiB,
                            v[1].str()));
      runs_.set_per_gpu(pinned ? &B::h2d_pinned_GBps : &B::h2d_pageable_GBps, 0, *gibps * kGiB, "GPUInspector.jl");
      runs_.note("GPUInspector.jl: host<->device is the max over both directions, stored as host-to-device; GiB/s converted to GB/s");
      pos_ = k;
    }
    return true;
  }
  if (!std::regex_search(line, m, shape))
    return false;
  const auto size = parse_int(m[1].str(), 1, kMaxGpuIndex + 1);
  if (!size || m[1].str() != m[2].str())
    fail(pos_, fmt::format("expected a square matrix of at most {} GPUs, found {} x {}", kMaxGpuIndex + 1, m[1].str(),
                           m[2].str()));
  const auto n = static_cast<std::size_t>(*size);
  Matrix matrix;
  std::size_t k = pos_ + 1;
  for (; k < lines_.size() && matrix.size() < n; ++k) {
    auto t = split_ws(lines_[k]);
    if (t.size() != n)
      fail(k, fmt::format("expected {} entries in this row of a {}x{} matrix", n, n, n));
    std::vector<double> row(n, kNaN);
    for (std::size_t c = 0; c < n; ++c) {
      double v = 0;
      if (parse_number(t[c], v) && (v < 0 || v * kGiB > kMaxLogValue))
        fail(k, fmt::format("expected a value from 0 to {:g}, found '{}'", kMaxLogValue / kGiB, t[c]));
      if (parse_number(t[c], v))
        row[c] = v;
      else if (t[c] != "nothing")
        fail(k, fmt::format("expected a number or 'nothing', found '{}'", t[c]));
    }
    matrix.push_back(std::move(row));
  }
  if (matrix.size() != n)
    fail(k, fmt::format("expected {} rows of a {}x{} matrix, found {}", n, n, n, matrix.size()));
  pos_ = k - 1;
  if (gi_target_ == "access")
    store_matrix(&B::p2p_connectivity, std::move(matrix), "GPUInspector.jl");
  else if (gi_target_ == "unidir" || gi_target_ == "bidir") {
    for (auto& row : matrix)
      for (auto& v : row)
        v *= kGiB;
    store_matrix(gi_target_ == "unidir" ? &B::unidir_p2p_GBps : &B::bidir_p2p_GBps, std::move(matrix),
                 "GPUInspector.jl");
  }
  gi_target_.clear();
  return true;
}

bool TextReader::topo_header(const std::string& line)
{
  static const std::regex gpu_name(R"(GPU(\d+))");
  auto head = split_ws(line);
  std::size_t n = 0;
  while (n < head.size() && head[n] == fmt::format("GPU{}", n))
    ++n;
  if (n == 0)
    return false;
  std::vector<std::vector<std::string>> topo;
  std::size_t k = pos_ + 1;
  for (; k < lines_.size() && topo.size() < n; ++k) {
    auto t = split_ws(lines_[k]);
    if (t.size() < n + 1 || t[0] != fmt::format("GPU{}", topo.size()))
      break;
    for (std::size_t c = 1; c <= n; ++c)
      if (!topo_label(t[c]))
        fail(k, fmt::format("expected a link of nvidia-smi topo -m (X, NV1..NV{}, PIX, PXB, PHB, NODE, SYS, SOC) for "
                            "GPU{}, found '{}'", kMaxNvLinks, c - 1, t[c]));
    topo.emplace_back(t.begin() + 1, t.begin() + 1 + static_cast<long>(n));
  }
  if (topo.size() != n)
    fail(k, fmt::format("expected {} rows GPU0..GPU{} of nvidia-smi topo -m", n, n - 1));
  if (!runs_.current().topology.empty())
    runs_.new_run();
  runs_.current().topology = std::move(topo);
  pos_ = k - 1;
  return true;
}

bool TextReader::bench_link_host_table(const std::string& line)
{
  if (!contains(line, "Host-Device Bandwidth (GB/s)"))
    return false;
  using B = BandwidthMeasurements;
  const std::size_t header = next_nonblank(pos_ + 1);
  const auto cols = header < lines_.size() ? split_ws(lines_[header]) : std::vector<std::string>{};
  std::size_t k = header + 1;
  for (; k < lines_.size(); ++k) {
    auto t = split_ws(lines_[k]);
    int gpu = 0;
    if (t.size() != cols.size() || cols.empty() || !is_index(t[0], gpu))
      break;
    for (std::size_t c = 1; c < cols.size(); ++c) {
      double v = 0;
      if (!parse_number(t[c], v))
        continue;
      if (!(v > 0) || v > kMaxLogValue)
        fail(k, fmt::format("expected a bandwidth from 0 to {:g} GB/s in column '{}', found '{}'", kMaxLogValue, cols[c], t[c]));
      std::vector<double> B::*slot = cols[c] == "h2d_pinned"     ? &B::h2d_pinned_GBps
                                     : cols[c] == "d2h_pinned"   ? &B::d2h_pinned_GBps
                                     : cols[c] == "h2d_pageable" ? &B::h2d_pageable_GBps
                                     : cols[c] == "d2h_pageable" ? &B::d2h_pageable_GBps
                                     : cols[c] == "d2d"          ? &B::d2d_GBps
                                                                 : nullptr;
      if (!slot)
        fail(header, "unknown column '" + cols[c] + "' in the Host-Device Bandwidth table");
      runs_.set_per_gpu(slot, static_cast<std::size_t>(gpu), v, "dtsim-bench-link");
    }
  }
  pos_ = k - 1;
  return true;
}

void TextReader::run()
{
  static const std::regex p2p_device(R"(^Device: (\d+), (.+?), pciBusID)");
  for (pos_ = 0; pos_ < lines_.size(); ++pos_) {
    const std::string& line = lines_[pos_];
    if (is_comment_or_blank(line))
      continue;
    std::smatch m;
    if (contains(line, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]")) {
      runs_.new_run();
    } else if (std::regex_search(line, m, p2p_device)) {
      auto& names = runs_.current().gpu_names;
      const auto index = parse_int(m[1].str(), 0, kMaxGpuIndex);
      if (!index)
        fail(pos_, fmt::format("expected a device index 0..{}, found '{}'", kMaxGpuIndex, m[1].str()));
      const auto d = static_cast<std::size_t>(*index);
      if (names.size() <= d)
        names.resize(d + 1);
      names[d] = m[2];
    } else if (p2p_title(line) || nvbandwidth_title(line) || bench_link_host_table(line) ||
               topo_header(line) || gpuinspector_line(line) || bandwidth_test_line(line)) {
      continue;
    }
  }
}

}  // namespace

void read_text_formats(const std::vector<std::string>& lines, RunCollector& runs)
{
  TextReader(lines, runs).run();
}

}  // namespace dtsim::calibration::detail
