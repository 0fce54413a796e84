// Internal to the bandwidth-log readers: the run collector and line helpers they share.
#pragma once

#include "calibration/bandwidth_logs.hpp"
#include "sim/util/text.hpp"

#include <string>
#include <vector>

namespace dtsim::calibration::detail {

/// The largest GPU index a log may name. The largest NVLink domain (GB200 NVL72) has 72 GPUs and
/// a node of PCIe cards at most 16; 1023 leaves room and bounds what a bad index can allocate.
constexpr int kMaxGpuIndex = 1023;

/// The largest value a bandwidth log may hold, in GB/s or us: the fastest figure of any of these
/// logs is a GPU's copy within its own memory (HBM3e of a B200: 8 TB/s, NVIDIA B200 datasheet), so
/// 1e5 leaves room; a larger value is a broken log, not a measurement.
constexpr double kMaxLogValue = 1e5;

/// Collects runs; starts a new run when a quantity that is already set appears again.
class RunCollector {
public:
  explicit RunCollector(std::string file) : file_(std::move(file)) { runs_.emplace_back(); }

  BandwidthMeasurements& current() { return runs_.back(); }
  /// The matrix slot `member` of the current run, after starting a new run if it is filled.
  Matrix& matrix_slot(Matrix BandwidthMeasurements::*member, const std::string& format);
  /// Sets one per-GPU value; starts a new run if that GPU already has a value there.
  void set_per_gpu(std::vector<double> BandwidthMeasurements::*member, std::size_t gpu, double value,
                   const std::string& format);
  /// Starts a new run unless the current one is empty.
  void new_run();
  void note(const std::string& text);
  const std::string& file() const { return file_; }
  std::vector<BandwidthMeasurements> finish();

private:
  std::string file_;
  std::vector<BandwidthMeasurements> runs_;
  void claim(const std::string& format);
};

bool parse_number(const std::string& token, double& out);   ///< false for N/A, nothing, text
bool is_index(const std::string& token, int& out);
bool is_comment_or_blank(const std::string& line);
/// `line` without ECMA-48 control sequences (ESC [ ... final byte): terminal underline and colours.
std::string without_terminal_escapes(const std::string& line);
/// The lines of a text log: '\r' of CRLF files and terminal escapes dropped.
std::vector<std::string> log_lines(const std::string& text);

/// Readers of the text formats and of the two structured ones. Each appends to the collector.
void read_text_formats(const std::vector<std::string>& lines, RunCollector& runs);
void read_bench_link_json(const std::string& text, RunCollector& runs);
/// True (and reads the table) when `lines` is a CSV table with known column names.
bool read_csv_table(const std::vector<std::string>& lines, RunCollector& runs);

}  // namespace dtsim::calibration::detail
