#pragma once

#include "sim/report/results.hpp"

#include <nlohmann/json.hpp>

namespace dtsim {

/// `dtsim run --json`: every figure in seconds, samples/s and days (keys are a contract).
nlohmann::json json_report(const RunResult& result);

}  // namespace dtsim
