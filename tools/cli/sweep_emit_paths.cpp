#include "tools/cli/sweep_emit_paths.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace dtsim::cli {

namespace fs = std::filesystem;

/// A point's document with each file it names relative to the scenario made absolute, resolved as the
/// loaders resolve it (the jobs run the copy in DIR/points/, where "beside the scenario" is another
/// folder): /model (sim/model/model_loader.cpp resolve_model_path: as given, else beside), /cluster and
/// /cluster/base (sim/topology/topology_builder.cpp resolve_path: the same), /cluster/calibration
/// (calibration/calibration_apply.cpp beside: beside first, else as given) and /training/compute/profile
/// (sim/scenario/profile_source.cpp beside: beside only). Files named inside those files resolve beside
/// them, which do not move.
nlohmann::json with_absolute_files(nlohmann::json doc, const std::string& scenario)
{
  const fs::path folder = fs::path(scenario).parent_path();
  const auto is_json = [](const std::string& s) { return s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0; };
  enum class Order { GivenFirst, BesideFirst, BesideOnly };
  const auto rewrite = [&](nlohmann::json* value, Order order) {
    if (!value->is_string())
      return;
    const fs::path ref = value->get<std::string>();
    if (ref.empty() || ref.is_absolute())
      return;
    std::error_code ec;
    fs::path resolved = ref;
    if (order == Order::BesideOnly || (order == Order::BesideFirst && fs::exists(folder / ref, ec)) ||
        (order == Order::GivenFirst && !fs::exists(ref, ec) && fs::exists(folder / ref, ec)))
      resolved = folder / ref;
    *value = fs::absolute(resolved, ec).lexically_normal().string();
  };
  if (doc.contains("model") && doc["model"].is_string() && is_json(doc["model"].get<std::string>()))
    rewrite(&doc["model"], Order::GivenFirst);
  if (doc.contains("cluster")) {
    nlohmann::json& cluster = doc["cluster"];
    if (cluster.is_string() && is_json(cluster.get<std::string>()))
      rewrite(&cluster, Order::GivenFirst);
    if (cluster.is_object()) {
      if (cluster.contains("base") && cluster["base"].is_string() && is_json(cluster["base"].get<std::string>()))
        rewrite(&cluster["base"], Order::GivenFirst);
      if (cluster.contains("calibration"))
        rewrite(&cluster["calibration"], Order::BesideFirst);
    }
  }
  if (doc.contains("training") && doc["training"].is_object() && doc["training"].contains("compute") &&
      doc["training"]["compute"].is_object() && doc["training"]["compute"].contains("profile"))
    rewrite(&doc["training"]["compute"]["profile"], Order::BesideOnly);
  return doc;
}

namespace {

/// Whether an existing jobs.txt / slurm.sh is one an earlier `sweep --emit` wrote (replaced, then, as
/// the rest of that sweep is): its first job line, or slurm.sh's "# dtsim sweep:" line.
bool written_by_emit(const fs::path& file, const std::string& name)
{
  std::ifstream in(file);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  if (name == "jobs.txt")
    return first.rfind("cd ", 0) == 0 && first.find("\"${DTSIM:-") != std::string::npos;
  return first == "#!/bin/bash" && second.rfind("# dtsim sweep: ", 0) == 0;
}

}  // namespace

void check_emit_folder(const std::string& dir)
{
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(dir, "", "is not a directory (expected a folder to write the sweep into, for --emit)");
  // A folder that holds a sweep already is refused: its results/ would be collected under the new
  // points' values (results of other points, with no error).
  for (const char* entry : {"manifest.json", "points", "results"})
    if (fs::exists(fs::symlink_status(fs::path(dir) / entry, ec)))
      throw InputError(dir, "", fmt::format("holds a sweep already ({} exists): expected a new or empty folder for --emit "
                                            "(remove the old sweep, or choose another folder)",
                                            entry));
  // jobs.txt and slurm.sh are checked before anything is written: a user's own file of that name is
  // refused, never replaced (nor a folder of that name, which no write could replace).
  for (const char* entry : {"jobs.txt", "slurm.sh"}) {
    const fs::path f = fs::path(dir) / entry;
    const fs::file_status st = fs::symlink_status(f, ec);
    if (!fs::exists(st))
      continue;
    if (!fs::is_regular_file(st) || !written_by_emit(f, entry))
      throw InputError(f.string(), "", "exists and is not a dtsim sweep's (expected a new or empty folder for --emit: "
                                       "move the file, or choose another folder)");
  }
}

}  // namespace dtsim::cli
