// Puts simulated nccl-tests beside measured logs (dtsim validate) and fits the NCCL parameters of
// the calibration file to them (dtsim calibrate). The fit is physical: the simulated time of each
// row splits into the start-up latency (launch overhead + NCCL base latency + scaled per-hop
// latencies) and the transfer time, which scales as 1 / (efficiency of the bottleneck link class);
// a least-squares fit of relative time errors gives launch overhead, hop-latency scale and that
// efficiency. The (algorithm, protocol) choice follows NCCL's tables and does not move with them.
#pragma once

#include "calibration/nccl_tests_log.hpp"
#include "sim/collectives/collective_options.hpp"

#include <nlohmann/json.hpp>

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
};

/// The collective a log measured; throws InputError when dtsim cannot simulate it.
CollectiveOp log_collective(const NcclTestsLog& log);

/// GPUs per thread of the run that wrote `log`: its header's nGpus, else the usual run on this
/// topology (usual_gpus_per_thread).
int log_gpus_per_thread(const Topology& topology, const NcclTestsLog& log);

/// Simulates every row of `log` on `topology` and compares. Throws InputError when the log's rank
/// count differs from the topology's GPU count.
ValidationResult validate_log(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options);

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result);

struct NcclFitResult {
  NcclParams params;
  std::string efficiency_fitted;  ///< which efficiency the transfer-time factor went to
  std::size_t rows_dropped = 0;   ///< rows left out of the final fit as outliers
  nlohmann::json fragment;        ///< {"nccl": {...}, "fit": {...}}
  std::vector<ValidationResult> before, after;
};

/// Fits on the rows of `logs` with size <= max_bytes (all rows when 0).
NcclFitResult fit_nccl_params(const Topology& topology, const std::vector<NcclTestsLog>& logs,
                              const NcclParams& start, std::uint64_t max_bytes = 0);

double median_abs(std::vector<double> values);

}  // namespace dtsim
