// See training_memory.hpp.
#include "sim/predict/training_memory.hpp"

#include "sim/util/abs_error_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace dtsim {

namespace {

AbsErrorSummary summary_of(const std::vector<MemoryComparison>& rows)
{
  std::vector<double> e;
  for (const auto& r : rows)
    e.push_back(r.error());
  return summarize_abs_errors(std::move(e));
}

/// The runs measured (the others are predicted only: not known to have run).
long measured_runs(const std::vector<TrainingRun>& runs)
{
  return std::count_if(runs.begin(), runs.end(), [](const TrainingRun& r) { return r.measured_rate > 0; });
}

}  // namespace

std::vector<MemoryComparison> memory_comparisons(const std::vector<TrainingRun>& runs)
{
  std::vector<MemoryComparison> out;
  for (const auto& r : runs) {
    if (r.measured_allocated_gib > 0)
      out.push_back({r.id, "allocated", r.measured_allocated_gib, r.predicted_allocated_gib});
    if (r.measured_reserved_gib > 0)
      out.push_back({r.id, "reserved", r.measured_reserved_gib, r.predicted_reserved_gib});
  }
  return out;
}

std::vector<const TrainingRun*> runs_not_fitting(const std::vector<TrainingRun>& runs)
{
  std::vector<const TrainingRun*> out;
  for (const auto& r : runs)
    if (!r.predicted_fits && r.measured_rate > 0)  // a run not measured is not known to have run
      out.push_back(&r);
  return out;
}

namespace {

std::string fits_line(const std::vector<TrainingRun>& runs)
{
  const auto wrong = runs_not_fitting(runs);
  const long ran = measured_runs(runs);
  if (ran == 0)
    return "";
  if (wrong.empty() && ran == 1)
    return "# fits: dtsim's peak fits the GPU's memory on the one run, as it ran\n";
  if (wrong.empty())
    return fmt::format("# fits: dtsim's peak fits the GPU's memory on all {} runs, as each ran\n", ran);
  std::string out = fmt::format("# fits: dtsim's peak exceeds the GPU's memory on {} of the {} runs, though each ran:",
                                wrong.size(), ran);
  for (const auto* r : wrong)
    out += fmt::format(" {} ({:.1f} of {:.1f} GiB)", r->id, r->predicted_device_gib, r->capacity_gib);
  return out + "\n";
}

std::string memory_table(const std::vector<TrainingRun>& runs)
{
  const auto rows = memory_comparisons(runs);
  if (rows.empty())
    return "";
  std::string out = fmt::format("{:<34} {:<34} {:>9} {:>9} {:>8}\n", "# peak memory per GPU (GiB)", "kind", "measured",
                                "dtsim", "error");
  for (const auto& r : rows)
    out += fmt::format("{:<34} {:<34} {:>9.1f} {:>9.1f} {:>+7.1f}%\n", r.id, r.kind, r.measured_gib, r.predicted_gib,
                       100 * r.error());
  const AbsErrorSummary e = summary_of(rows);
  return out + fmt::format("# {} memory figures: median |error| {:.1f}%, worst {:.1f}%\n", rows.size(), 100 * e.median,
                           100 * e.worst);
}

}  // namespace

std::string format_training_memory(const std::vector<TrainingRun>& runs)
{
  return memory_table(runs) + fits_line(runs);
}

nlohmann::json training_memory_json(const std::vector<TrainingRun>& runs)
{
  const auto rows = memory_comparisons(runs);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows)
    list.push_back({{"id", r.id}, {"kind", r.kind}, {"measured_gib", r.measured_gib}, {"predicted_gib", r.predicted_gib},
                    {"error", r.error()}});
  const AbsErrorSummary e = summary_of(rows);
  nlohmann::json not_fitting = nlohmann::json::array();
  for (const auto* r : runs_not_fitting(runs))
    not_fitting.push_back({{"id", r->id}, {"device_gib", r->predicted_device_gib}, {"capacity_gib", r->capacity_gib}});
  return {{"rows", list},
          {"runs", measured_runs(runs)},
          {"not_fitting", not_fitting},
          {"compared", rows.size()},
          {"median_abs_error", rows.empty() ? nlohmann::json() : nlohmann::json(e.median)},
          {"worst_abs_error", rows.empty() ? nlohmann::json() : nlohmann::json(e.worst)}};
}

}  // namespace dtsim
