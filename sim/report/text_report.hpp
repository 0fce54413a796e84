#pragma once

#include "sim/report/results.hpp"

#include <string>

namespace dtsim {

/// The human-readable report of `dtsim run`.
std::string text_report(const RunResult& result);

}  // namespace dtsim
