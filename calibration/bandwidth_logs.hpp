// Bandwidth measurements as the common tools print them, read into one structure.
//
// Formats recognised (several may be concatenated in one file; lines starting with '#' are
// comments and are skipped):
//   - CUDA samples p2pBandwidthLatencyTest (and dtsim-bench-link's text output, which uses the
//     same matrix titles plus a "Host-Device Bandwidth (GB/s)" table),
//   - NVIDIA nvbandwidth ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)" ...),
//   - CUDA samples bandwidthTest ("Host to Device Bandwidth, 1 Device(s)" ...),
//   - GPUInspector.jl REPL output (GiB/s, converted to GB/s),
//   - `nvidia-smi topo -m` (the GPU part of the matrix: X, NV12, PIX, SYS ...),
//   - CSV tables with named columns (h2d_pinned_GBps, d2h_GBps + memory, ...),
//   - dtsim-bench-link's JSON output (a file whose first character is '{').
// All bandwidths are GB/s (1e9 bytes/s), latencies microseconds.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace dtsim::calibration {

/// Square matrix indexed [row][column]; NaN where the tool printed nothing (N/A, nothing, diagonal
/// of nvbandwidth). Empty when not measured.
using Matrix = std::vector<std::vector<double>>;

inline bool has_value(double v) { return !std::isnan(v); }

/// One run of one machine. A file holding several runs (two drivers, several machines) gives one
/// BandwidthMeasurements per run: a new run starts whenever a quantity already read appears again.
struct BandwidthMeasurements {
  std::string format;                  ///< tool of the first quantity read ("p2pBandwidthLatencyTest", ...)
  std::string label;                   ///< run label where the file gives one (CSV gpu/system column)
  std::vector<std::string> gpu_names;  ///< by device index, where printed

  Matrix p2p_connectivity;        ///< 1 = peer access possible, 0 = not
  Matrix unidir_p2p_GBps;         ///< peer access enabled (or nvbandwidth GPU->GPU); [src][dst]
  Matrix unidir_nop2p_GBps;       ///< peer access disabled: staged through host memory
  Matrix bidir_p2p_GBps;          ///< both directions at once, sum of the two
  Matrix bidir_nop2p_GBps;
  Matrix latency_p2p_us;          ///< GPU-side latency, peer access enabled
  Matrix latency_nop2p_us;
  Matrix cpu_latency_p2p_us;      ///< CPU-side latency rows of p2pBandwidthLatencyTest
  Matrix cpu_latency_nop2p_us;
  /// `nvidia-smi topo -m` labels between GPUs ("X", "NV2", "PIX", "PXB", "PHB", "NODE", "SYS").
  std::vector<std::vector<std::string>> topology;

  /// Per GPU (index = device); NaN where not measured. Vectors are empty when nothing was measured.
  std::vector<double> h2d_pinned_GBps;
  std::vector<double> d2h_pinned_GBps;
  std::vector<double> h2d_pageable_GBps;
  std::vector<double> d2h_pageable_GBps;
  std::vector<double> d2d_GBps;   ///< device-local copy, counted read + write (bandwidthTest's way)

  std::vector<std::string> notes;  ///< what was approximated while reading (units, SM copies ...)

  bool empty() const;
};

/// Parses every run in `text`. `file` names the input in errors. Throws InputError (exit 2) when
/// nothing recognisable is found or a matrix is malformed (the message names the line).
std::vector<BandwidthMeasurements> parse_bandwidth_log(const std::string& text, const std::string& file);

/// Reads and parses a file (InputError when it cannot be read).
std::vector<BandwidthMeasurements> load_bandwidth_log(const std::string& path);

/// Median of the values that are not NaN; NaN when there are none.
double median_of(std::vector<double> values);

/// Off-diagonal cells that hold a value.
std::vector<double> off_diagonal(const Matrix& m);

}  // namespace dtsim::calibration
