#include "calibration/calibration_coverage.hpp"

#include "calibration/nccl_sensitivity.hpp"

#include <fmt/format.h>

namespace dtsim {

std::vector<std::string> rows_bound_by_presets(const Topology& topology, const NcclTestsLog& log,
                                               const ValidationResult& result, const CollectiveOptions& options,
                                               const CalibrationFile& calibration)
{
  const nlohmann::json& doc = calibration.json;
  if (!doc.contains("fit") || !doc["fit"].is_object() || !doc["fit"].contains("efficiency_kept") ||
      !doc["fit"]["efficiency_kept"].is_object() || doc["fit"]["efficiency_kept"].empty())
    return {};
  const nlohmann::json& kept = doc["fit"]["efficiency_kept"];
  std::vector<double> base;
  for (const auto& r : result.rows)
    base.push_back(r.predicted_us);
  const CollectiveOptions run = log_run_options(topology, log, options);
  NcclParams used = run.params ? *run.params : NcclParams::defaults(topology.gpu.compute_capability);
  std::vector<std::string> lines;
  for (const auto& shares : efficiency_shares(topology, log_collective(log), log_sizes(log), run, base)) {
    if (!kept.contains(shares.name))
      continue;
    int bound = 0;
    for (std::size_t i = 0; i < shares.us.size() && i < base.size(); ++i) {
      const auto c = parse_nccl_class(result.rows[i].algorithm);  // "Ring/LL128"
      if (c && link_share_applies(shares.name, c->first, c->second) && shares.us[i] > 0.5 * base[i])
        ++bound;
    }
    if (bound == 0)
      continue;
    // "fit" is informational (a hand-edited file may hold anything there): the value printed is the
    // one this prediction used, the share what the file says of it (0 when unreadable).
    const nlohmann::json& k = kept[shares.name];
    const double share = k.is_object() && k.contains("largest_share_of_a_row_time") &&
                                 k["largest_share_of_a_row_time"].is_number()
                             ? k["largest_share_of_a_row_time"].get<double>()
                             : 0.0;
    lines.push_back(fmt::format(
        "{} of {} rows are bound by {} {:.3g}, a preset: the calibration's logs did not constrain it (at most {:.0f}% "
        "of a fitted row's time); calibrate on a run that loads that link class to predict these rows",
        bound, base.size(), shares.name, nccl_rate_parameter(used, shares.name), 100 * share));
  }
  return lines;
}

}  // namespace dtsim
