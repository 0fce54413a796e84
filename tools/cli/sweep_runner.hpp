// Runs the points of a sweep (one scenario file, one list of --set overrides per point), in this
// process or in `jobs` forked processes, with a progress line on stderr when stderr is a terminal.
#pragma once

#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dtsim::cli {

struct PointOutcome {
  nlohmann::json result;  ///< json_report of the run (null when it failed)
  std::string error;      ///< the one-line message of a failed point
  int exit_code = 0;      ///< 0, 2 (bad input) or 1
};

std::vector<PointOutcome> run_points(const std::string& scenario, const std::vector<std::vector<Override>>& points,
                                     int jobs);

/// One scenario file and its overrides.
struct PointJob {
  std::string scenario;
  std::vector<Override> overrides;
};

std::vector<PointOutcome> run_points(const std::vector<PointJob>& points, int jobs);

/// GPU counts 1, 2, 4, ... below `gpus`, then `gpus` itself.
std::vector<int> powers_of_two_up_to(int gpus);

}  // namespace dtsim::cli
