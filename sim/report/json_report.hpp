#pragma once

#include "sim/report/results.hpp"

#include <nlohmann/json.hpp>

#include <optional>

namespace dtsim {

/// `dtsim run --json`: every figure in seconds, samples/s and days (keys are a contract).
nlohmann::json json_report(const RunResult& result);

/// A result's `pipeline_bubble_s` read back (compare, sweep, the HTML tables): the fill and drain every
/// stage waits for; nullopt where it is null (no pipeline) or absent (a result written before it).
std::optional<double> pipeline_bubble_of(const nlohmann::json& report);

}  // namespace dtsim
