// Measured peak memory of training runs against dtsim's (the runs CSV's peak_allocated_gib and
// peak_reserved_gib columns, training_runs.hpp): per row and kind, the measured and predicted GiB per
// GPU and the error; each row on its own (memory does not cancel against a baseline as a compute
// calibration does). Issue 30's targets for the peak allocated: median |error| 5%, worst 10%.
#pragma once

#include "sim/predict/training_runs.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim {

struct MemoryComparison {
  std::string id;
  std::string kind;  ///< "allocated" or "reserved"
  double measured_gib = 0, predicted_gib = 0;
  double error() const { return predicted_gib / measured_gib - 1; }
};

/// One entry per row and measured kind, in the rows' order.
std::vector<MemoryComparison> memory_comparisons(const std::vector<TrainingRun>& runs);

/// The measured runs dtsim says do not fit their GPUs' memory, though each ran (the fits verdict of
/// issue 31: right on every public configuration). Rows not measured are not judged.
std::vector<const TrainingRun*> runs_not_fitting(const std::vector<TrainingRun>& runs);

/// The table printed after the throughput table (none when no row has a memory column), then one
/// line with the fits verdict over every measured run (none when no row is measured).
std::string format_training_memory(const std::vector<TrainingRun>& runs);

/// The same as JSON: {"rows": [...], "compared": n, "median_abs_error", "worst_abs_error"} (null
/// figures when no row has one), "runs" (the measured ones) and "not_fitting": [{"id", "device_gib",
/// "capacity_gib"}].
nlohmann::json training_memory_json(const std::vector<TrainingRun>& runs);

}  // namespace dtsim
