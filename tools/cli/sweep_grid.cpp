#include "tools/cli/sweep_grid.hpp"

#include "tools/cli/html_options.hpp"
#include "tools/cli/sweep_emit_paths.hpp"

#include "sim/predict/predict.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace dtsim::cli {

namespace fs = std::filesystem;

namespace {

/// A --vary value as --set reads it: JSON, else a bare word (a string); a number beyond a double or
/// nesting too deep is refused, naming --vary.
nlohmann::json value_of(const std::string& text)
{
  try {
    return parse_json_text(text, "--vary");
  } catch (const InputError& e) {
    if (e.problem().rfind("malformed JSON", 0) != 0)
      throw;
    return text;  // a bare word, as --set takes it
  }
}

/// Most points of one sweep (the product of the --vary lists): each is a simulation.
constexpr std::size_t kMaxSweepPoints = 10000;

// Shell quoting for the generated command lines.
std::string quoted(const std::string& s)
{
  std::string out = "'";
  for (const char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string self_path()
{
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dtsim") : p.string();
}

}  // namespace

VariedField parse_vary(const std::string& text)
{
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--vary", "", fmt::format("expected key.path=value1,value2,..., got \"{}\"", text));
  VariedField f{text.substr(0, eq), {}};
  try {
    parse_override(text);  // the path's own checks, UTF-8
  } catch (const InputError& e) {
    throw InputError("--vary", "", e.problem());
  }
  int depth = 0;
  bool in_string = false;
  std::string current;
  for (std::size_t i = eq + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\'))
      in_string = !in_string;
    if (!in_string && (c == '[' || c == '{'))
      ++depth;
    if (!in_string && (c == ']' || c == '}'))
      --depth;
    if (c == ',' && depth == 0 && !in_string) {
      f.values.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  f.values.push_back(current);
  if (depth != 0 || in_string)
    throw InputError("--vary", "", fmt::format("unbalanced brackets or quotes in \"{}\"", text));
  for (const auto& v : f.values) {
    if (v.empty())
      throw InputError("--vary", "", fmt::format("empty value in \"{}\"", text));
    (void)value_of(v);
  }
  return f;
}

std::vector<GridPoint> make_grid(const std::string& scenario, const std::vector<Override>& base,
                                 const std::vector<VariedField>& fields)
{
  for (std::size_t i = 0; i < fields.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (fields[i].path == fields[j].path)
        throw InputError("--vary", "", fmt::format("{} is varied twice", fields[i].path));
  // Keys that undo each other (apply_overrides's: another way of giving the batch or the compute
  // times removes the first, a member holding another replaces it) would leave an axis, or a --set,
  // with no effect on the points: refused, naming both.
  for (std::size_t i = 0; i < fields.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (override_replaces(fields[i].path, fields[j].path) || override_replaces(fields[j].path, fields[i].path))
        throw InputError("--vary", "", fmt::format("{} and {} exclude each other (setting one removes or replaces the "
                                                   "other): vary one of them",
                                                   fields[j].path, fields[i].path));
    for (const auto& o : base)  // a --set that removes a member (null) is not undone by another removing it
      if (o.value != "null" && override_replaces(fields[i].path, o.path))
        throw InputError("--vary", "", fmt::format("{} would undo --set {} at every point (setting one removes or "
                                                   "replaces the other): vary it, or set it, not both",
                                                   fields[i].path, o.path));
  }
  std::size_t total = 1;
  for (const auto& f : fields) {
    total *= f.values.size();
    if (total > kMaxSweepPoints)
      throw InputError("--vary", "", fmt::format("more than {} points in the grid (each is a simulation)", kMaxSweepPoints));
  }
  const bool nodes_varied = std::any_of(fields.begin(), fields.end(), [](const auto& f) {
    return f.path == "cluster.nodes" || f.path == "cluster";
  });
  std::vector<GridPoint> out;
  std::vector<std::size_t> index(fields.size(), 0);
  while (true) {
    GridPoint p{nlohmann::json::object(), base};
    std::string gpus;
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const auto& text = fields[k].values[index[k]];
      p.values[fields[k].path] = value_of(text);
      if (fields[k].path == "gpus")
        gpus = text;
      else
        p.overrides.push_back({fields[k].path, text, "--vary"});
    }
    if (!gpus.empty()) {
      const auto n = value_of(gpus);
      if (!n.is_number_integer() || n.get<long long>() <= 0 || n.get<long long>() > 1 << 20)
        throw InputError("--vary", "", fmt::format("gpus expects positive integers, got {}", gpus));
      if (nodes_varied) {
        p.overrides.push_back({"gpus", gpus, "--vary"});
      } else {
        p.overrides = with_gpus(scenario, p.overrides, n.get<int>());
      }
    }
    out.push_back(std::move(p));
    std::size_t k = fields.size();
    while (k > 0) {
      --k;
      if (++index[k] < fields[k].values.size())
        break;
      index[k] = 0;
      if (k == 0)
        return out;
    }
    if (fields.empty())
      return out;
  }
}

void emit_sweep(const std::string& dir, const std::string& scenario, const std::vector<std::string>& varied,
                const std::vector<GridPoint>& points)
{
  // Every point checked before anything is written, as `dtsim run` would refuse it: read, and
  // planned (its strategy's options, model, topology), not simulated.
  std::vector<Scenario> scenarios;
  for (const auto& p : points) {
    try {
      scenarios.push_back(load_scenario(scenario, p.overrides));
      check_plan(scenarios.back());
    } catch (const InputError& e) {
      throw InputError("sweep point " + p.values.dump(), "", e.what());  // as a point that runs here is named
    }
  }
  check_emit_folder(dir);
  std::error_code ec;
  // What this call creates, deepest last: removed again if a write fails, so that nothing is left
  // half-written (its new files first, then the folders it made, each only if empty).
  std::vector<fs::path> made_dirs;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made_dirs.insert(made_dirs.begin(), p);
    if (p == p.parent_path())
      break;
  }
  const fs::path root = fs::absolute(dir);
  for (const char* sub : {"points", "results"})
    if (!fs::exists(root / sub, ec))
      made_dirs.push_back(root / sub);
  std::vector<fs::path> written;
  std::vector<std::pair<fs::path, std::string>> replaced;  // an earlier emit's jobs.txt / slurm.sh, as it was
  const auto undo = [&] {
    std::error_code ignored;
    for (const auto& f : written)
      fs::remove(f, ignored);
    for (const auto& [f, text] : replaced) {
      try {
        write_file_atomically(f.string(), text);  // put back: a failed emit leaves no file replaced
      } catch (const std::exception&) {
      }
    }
    for (auto it = made_dirs.rbegin(); it != made_dirs.rend(); ++it)
      fs::remove(*it, ignored);  // only an empty folder goes
  };
  fs::create_directories(root / "points", ec);
  if (!ec)
    fs::create_directories(root / "results", ec);
  if (ec) {
    undo();
    throw InputError(dir, "", fmt::format("cannot create the sweep folder: {}", ec.message()));
  }
  const auto write = [&](const fs::path& file, const std::string& text) {
    const bool is_new = !fs::exists(file, ec);  // a file of an earlier emit is replaced, never removed
    if (!is_new) {
      std::ifstream in(file, std::ios::binary);
      std::ostringstream old;
      old << in.rdbuf();
      replaced.emplace_back(file, old.str());
    }
    try {
      write_file_atomically(file.string(), text);
    } catch (...) {
      undo();
      throw;
    }
    if (is_new)
      written.push_back(file);
  };
  const std::string cwd = fs::current_path().string();
  const std::string dtsim = self_path();
  nlohmann::json manifest = {{"scenario", fs::absolute(scenario).string()}, {"varied", varied}, {"points", nlohmann::json::array()}};
  std::string jobs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string id = fmt::format("{:04d}", i);
    const Scenario& s = scenarios[i];
    // Relative files named by the scenario (models, clusters, calibrations, profiles) resolved beside it:
    // the point, in another folder, names them by absolute path (with_absolute_files).
    const fs::path point_file = root / "points" / (id + ".json");
    write(point_file, with_absolute_files(s.doc, scenario).dump(2) + "\n");
    manifest["points"].push_back({{"id", id}, {"values", points[i].values}});
    const fs::path result = root / "results" / (id + ".json");
    jobs += fmt::format("cd {} && \"${{DTSIM:-{}}}\" run {} --json > {} && mv {} {}\n", quoted(cwd), dtsim,
                        quoted(point_file.string()), quoted(result.string() + ".tmp"), quoted(result.string() + ".tmp"),
                        quoted(result.string()));
  }
  write(root / "manifest.json", manifest.dump(2) + "\n");
  write(root / "jobs.txt", jobs);
  const std::string slurm = fmt::format(
      "#!/bin/bash\n"
      "# dtsim sweep: {} points, one Slurm array task each. Submit with: sbatch {}\n"
      "# then gather with: dtsim sweep --collect {}\n"
      "#SBATCH --job-name=dtsim-sweep\n"
      "#SBATCH --array=0-{}\n"
      "#SBATCH --cpus-per-task=1\n"
      "#SBATCH --output={}/results/slurm-%a.log\n"
      "set -euo pipefail\n"
      "sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {} | bash\n",
      points.size(), quoted((root / "slurm.sh").string()), quoted(root.string()), points.size() - 1, root.string(),
      quoted((root / "jobs.txt").string()));
  write(root / "slurm.sh", slurm);
  fs::permissions(root / "slurm.sh", fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  for (const auto& d : made_dirs)  // outermost first, removed last
    note_created_folder(d.string());
}

namespace {

/// A point's result as `dtsim run --json` writes it: an object with the figures the outputs read, of
/// their types (numbers finite, counts integers that fit an int). Each is required (a result without
/// them, `{}`, read as a point of 0 GPUs and 0 s that fits); straggler_wait_s and input_wait_s, which
/// results of older versions lack, are checked where present.
void check_result(const nlohmann::json& doc, const std::string& file)
{
  const JsonReader r(doc, file);
  if (!r.is_object())
    r.fail(fmt::format("expected the object `dtsim run --json` writes, got {}", describe_json(doc)));
  for (const char* key : {"scenario", "strategy", "topology"})
    (void)r.at(key).as_string();
  (void)r.at("gpus").as_int_in(1, 1 << 30);
  (void)r.at("nodes_used").as_int_in(0, 1 << 30);
  if (!(r.at("iteration_time_s").as_non_negative() > 0))
    r.at("iteration_time_s").fail("expected an iteration time above 0 s, got 0");
  for (const char* key : {"compute_time_s", "comm_time_s", "exposed_comm_time_s", "throughput_samples_per_s",
                          "speedup_vs_1gpu", "scaling_efficiency", "epoch_time_s", "total_time_days",
                          "ideal_linear_total_days"})
    (void)r.at(key).as_non_negative();  // times, rates and ratios: never below 0
  for (const char* key : {"straggler_wait_s", "input_wait_s"})
    if (auto v = r.find(key))
      (void)v->as_non_negative();
}

}  // namespace

CollectedSweep collect_sweep(const std::string& dir)
{
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw InputError(dir, "", "no such folder (expected the folder of a `dtsim sweep --emit`, for --collect)");
  if (!fs::is_directory(dir, ec))
    throw InputError(dir, "", "is not a directory (expected the folder of a `dtsim sweep --emit`, for --collect)");
  const fs::path root = dir;
  const std::string manifest_file = (root / "manifest.json").string();
  const nlohmann::json manifest = load_json_file(manifest_file);
  const JsonReader m(manifest, manifest_file);
  m.reject_unknown({"scenario", "varied", "points"});
  CollectedSweep out;
  out.scenario = m.at("scenario").as_string();
  for (const auto& v : m.at("varied").items())
    out.varied.push_back(v.as_string());
  if (m.at("points").items().size() > kMaxSweepPoints)
    m.at("points").fail(fmt::format("expected at most {} points", kMaxSweepPoints));
  std::vector<std::string> missing;
  std::set<std::string> ids;
  for (const auto& p : m.at("points").items()) {
    const auto id_reader = p.at("id");
    const std::string id = id_reader.as_string();
    // The ids emit writes (0000, 0001, ...): a name inside results/, never a path out of it.
    if (id.empty() || id.size() > 16 || id.find_first_not_of("0123456789") != std::string::npos)
      id_reader.fail(fmt::format("expected a point id of digits such as \"0007\", got \"{}\"", id));
    if (!ids.insert(id).second)
      id_reader.fail(fmt::format("expected each point once, got the id \"{}\" again", id));
    const auto values = p.at("values");
    if (!values.is_object())
      values.fail(fmt::format("expected an object of the varied fields' values, got {}", describe_json(values.json())));
    for (const auto& [field, value] : values.members())
      if (std::find(out.varied.begin(), out.varied.end(), field) == out.varied.end())
        value.fail(fmt::format("expected only the varied fields ({}), got \"{}\"", fmt::join(out.varied, ", "), field));
    const fs::path result = root / "results" / (id + ".json");
    if (!fs::exists(result)) {
      missing.push_back(id);
      continue;
    }
    out.values.push_back(values.json());
    out.results.push_back(load_json_file(result.string()));
    check_result(out.results.back(), result.string());
    // A point's GPU count is in its result: another point's result (a copy, a job's output sent to the
    // wrong file) is refused where the counts differ.
    if (const auto g = values.json().find("gpus"); g != values.json().end() && g->is_number_integer() &&
                                                   out.results.back().at("gpus").get<long long>() != g->get<long long>())
      JsonReader(out.results.back(), result.string())
          .at("gpus")
          .fail(fmt::format("expected the {} GPUs of point {} (manifest.json), got {}: the result of another point?",
                            g->get<long long>(), id, out.results.back().at("gpus").get<long long>()));
  }
  if (!missing.empty())
    throw InputError(dir, "", fmt::format("{} of {} points have no result yet (results/{}.json{}): run the jobs of "
                                          "jobs.txt or slurm.sh first",
                                          missing.size(), missing.size() + out.results.size(), missing.front(),
                                          missing.size() > 1 ? ", ..." : ""));
  return out;
}

}  // namespace dtsim::cli
