#pragma once

#include "sim/report/results.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

namespace dtsim {

/// `dtsim run --json`: every figure in seconds, samples/s and days (keys are a contract).
nlohmann::json json_report(const RunResult& result);

/// A result's `pipeline_bubble_s` read back (compare, sweep, the HTML tables): the fill and drain every
/// stage waits for; nullopt where it is null (no pipeline) or absent (a result written before it).
std::optional<double> pipeline_bubble_of(const nlohmann::json& report);

/// Whether a table of these results needs a pipeline bubble column: some result is pipelined.
bool any_pipeline_bubble(const std::vector<nlohmann::json>& reports);

}  // namespace dtsim
