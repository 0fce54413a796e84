// The HTML report's three result tables, each read from json_report figures: the strategies compared
// (with their stacked iteration bars), the scaling points (with the speedup and efficiency charts) and
// the sweep's points (with a throughput chart per varied field); each row carries the busiest GPU's
// memory and the fits verdict. And the time formats every section of the page writes.
#pragma once

#include "sim/report/html_report.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::html {

/// "3.21 days", "5.40 h" or "12.3 min".
std::string days_or_hours(double days);
/// Seconds as milliseconds: "12.345 ms".
std::string ms(double s);

/// "Strategies compared": `compared`, json_report of the same model and machine under several strategies.
std::string compare_section(const std::vector<nlohmann::json>& compared);
/// "Scaling": json_report of the same scenario at several GPU counts, in any order (sorted by GPUs).
std::string scaling_section(std::vector<nlohmann::json> rows);
/// "Sweep": the varied fields, in command-line order, and the points.
std::string sweep_section(const std::vector<std::string>& varied, const std::vector<SweepPoint>& points);

}  // namespace dtsim::html
