// dtsim calibrate's work, without the command line: reads every measurement file (format told by
// content, calibration_inputs.hpp), fits each kind, and merges the fragments into one calibration
// file. Order: the bandwidth fit sets the topology's links first, then the NCCL parameters are fitted
// on the calibrated topology (so NCCL's efficiencies are relative to the measured links).
#pragma once

#include "calibration/calibration_file.hpp"
#include "sim/collectives/nccl_env.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

struct CalibrateRequest {
  std::vector<std::string> inputs;  ///< measurement files, any mix of formats
  std::string topology;             ///< preset name or topology file
  std::optional<int> nodes;
  std::uint64_t max_bytes = 0;      ///< NCCL fit: rows up to this size (0 = all)
  NcclEnv nccl_overrides;           ///< NCCL_ALGO / NCCL_PROTO of the command line: win over the logs'
};

struct CalibrateOutcome {
  CalibrationFile file;
  std::vector<std::string> report;  ///< fit quality per source, one line each
};

/// Throws InputError (exit 2) naming the file for unreadable or unrecognised inputs.
CalibrateOutcome calibrate(const CalibrateRequest& request);

}  // namespace dtsim::calibration
