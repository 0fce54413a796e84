// Puts a simulated nccl-tests sweep beside a measured log (dtsim validate): row by row time and
// bus bandwidth, and the median |error| above and below 1 MiB.
#pragma once

#include "calibration/nccl_tests_log.hpp"
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

struct ValidationRow {
  std::uint64_t size = 0;
  double measured_us = 0;       ///< mean of out-of-place and in-place
  double predicted_us = 0;
  double measured_busbw = 0;    ///< GB/s, mean of out-of-place and in-place
  double predicted_busbw = 0;
  double busbw_error = 0;       ///< predicted / measured - 1 (= measured time / predicted time - 1)
  std::string algorithm;
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  double median_abs_error_large = 0;  ///< |busbw error|, sizes >= 1 MiB (NaN when none)
  double median_abs_error_small = 0;  ///< sizes < 1 MiB (NaN when none)
  int gpus_per_thread = 1;            ///< kernel launches per thread simulated (nccl-tests -g)
  /// The GPUs simulated, when the log ran on a subset of the machine's (log_topology); else empty.
  std::vector<std::string> subset;
  int machine_gpus = 0;
};

/// The collective a log measured; throws InputError when dtsim cannot simulate it.
CollectiveOp log_collective(const NcclTestsLog& log);

/// The NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE restriction of the run that wrote `log` (its
/// nccl_env; a command line's --algo / --proto are appended there, so they win). Throws InputError
/// naming the log on a value NCCL would reject.
NcclFilter log_filter(const NcclTestsLog& log);

/// GPUs per thread of the run that wrote `log`: its header's nGpus, else the usual run on this
/// topology (usual_gpus_per_thread).
int log_gpus_per_thread(const Topology& topology, const NcclTestsLog& log);

/// The machine with only the GPUs the log's run used as ranks: its "#  Rank ... on HOST device D"
/// lines (hosts in order of appearance are nodes 0, 1, ...; D the GPU of that node), else, on one
/// node, GPUs 0..ranks-1 (nccl-tests -g N takes the first N devices). `machine` itself when the log
/// used every GPU or does not say. Throws InputError naming the log when a device is not on the machine.
Topology log_topology(const Topology& machine, const NcclTestsLog& log);
/// Throws InputError when the topology's GPU count is not one the log allows.
void check_log_ranks(const Topology& topology, const NcclTestsLog& log);
/// The sizes of the log's rows, in order.
std::vector<std::uint64_t> log_sizes(const NcclTestsLog& log);
/// The measured rows beside `points` (simulated at log_sizes) on `ranks` ranks.
ValidationResult compare_with_log(const NcclTestsLog& log, const std::vector<NcclTestsPoint>& points, int ranks);

/// The options a log's rows are simulated under: `options` with the log's kernel launches per
/// thread and its NCCL_ALGO / NCCL_PROTO restriction (where `options.filter` names algorithms or
/// protocols, those win).
CollectiveOptions log_run_options(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options);

/// Simulates every row of `log` on `topology` under the log's restriction (log_filter; where
/// `options.filter` names algorithms or protocols, those win) and compares. Throws InputError when
/// the log's rank count differs from the topology's GPU count.
ValidationResult validate_log(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options);

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result);

}  // namespace dtsim
