// Fits the NCCL parameters of the calibration file to measured nccl-tests logs (dtsim calibrate). The fit is physical: the simulated time of each
// row splits into the start-up latency (launch overhead + NCCL base latency + scaled per-hop
// latencies) and the transfer time, whose parts scale as 1 / (efficiency of the link class that
// bounds them, found by simulation: nccl_sensitivity) or 1 / (LL, LL128 rate); a least-squares fit
// of relative time errors gives launch overhead, hop-latency scales and those efficiencies. The (algorithm, protocol) choice follows NCCL's tables and does not move with them.
#pragma once

#include "calibration/least_squares.hpp"
#include "calibration/nccl_validate.hpp"
#include "sim/collectives/collective_options.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

struct NcclFitResult {
  NcclParams params;
  std::string efficiency_fitted;  ///< which efficiencies the transfer-time factors went to
  /// The link efficiencies the logs leave at their start values, with the largest share of a
  /// fitted row's time that scales with each (near 0: the logs say nothing of that link class).
  std::string efficiency_kept;
  std::size_t rows_dropped = 0;   ///< rows left out of the final fit as outliers
  nlohmann::json fragment;        ///< {"nccl": {...}, "fit": {...}}
  std::vector<ValidationResult> before, after;
};

/// Fits on the rows of `logs` with size <= max_bytes (all rows when 0).
NcclFitResult fit_nccl_params(const Topology& topology, const std::vector<NcclTestsLog>& logs,
                              const NcclParams& start, std::uint64_t max_bytes = 0);

}  // namespace dtsim
