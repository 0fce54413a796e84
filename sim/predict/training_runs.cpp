#include "sim/predict/training_runs.hpp"

#include "sim/predict/predict.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace dtsim {

namespace {

std::vector<std::string> split_csv(const std::string& line)
{
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else if (c != '\r')
      out.back() += c;
  }
  return out;
}

struct Row {
  std::string file;
  int line = 0;
  std::map<std::string, std::string> cells;

  std::string get(const std::string& column) const
  {
    const auto it = cells.find(column);
    return it == cells.end() ? std::string() : it->second;
  }
  [[noreturn]] void fail(const std::string& column, const std::string& problem) const
  {
    throw InputError(file, "", fmt::format("line {}, column {}: {}", line, column, problem));
  }
  double number(const std::string& column, double low, double high) const
  {
    const std::string text = get(column);
    const auto v = parse_double(text);
    if (!v || *v < low || *v > high)
      fail(column, fmt::format("expected a number from {} to {}, got '{}'", low, high, text));
    return *v;
  }
  int integer(const std::string& column, int low, int high) const
  {
    const double v = number(column, low, high);
    if (v != std::floor(v))
      fail(column, fmt::format("expected a whole number, got '{}'", get(column)));
    return static_cast<int>(v);
  }
};

nlohmann::json scenario_of(const Row& row, const std::string& csv_dir)
{
  std::string cluster_name = row.get("cluster");
  if (cluster_name.empty())
    row.fail("cluster", "expected a topology preset or file");
  if (cluster_name.find(".json") != std::string::npos)
    cluster_name = (std::filesystem::path(csv_dir) / cluster_name).string();
  nlohmann::json cluster = {{"base", cluster_name}, {"nodes", row.integer("nodes", 1, 4096)}};
  if (!row.get("gpu").empty())
    cluster["gpu"] = row.get("gpu");
  if (!row.get("host_cores").empty())
    cluster["host"] = {{"cores", row.integer("host_cores", 1, 100000)}};

  nlohmann::json compute;
  const std::string c = row.get("compute");
  const auto eq = c.find('=');
  const std::string kind = c.substr(0, eq);
  if (eq == std::string::npos || (kind != "throughput" && kind != "efficiency" && kind != "step_time"))
    row.fail("compute", fmt::format("expected throughput=SAMPLES_PER_S, efficiency=F or step_time=S, got '{}'", c));
  Row value = row;
  value.cells["compute"] = c.substr(eq + 1);
  if (kind == "throughput")
    compute["single_gpu_throughput"] = value.number("compute", 1e-6, 1e9);
  else if (kind == "step_time")
    compute["step_time_s"] = value.number("compute", 1e-9, 1e6);
  else
    compute = {{"gpu", row.get("gpu").empty() ? nlohmann::json(nullptr) : nlohmann::json(row.get("gpu"))},
               {"efficiency", value.number("compute", 1e-3, 1)}};
  if (compute.contains("gpu") && compute["gpu"].is_null())
    row.fail("gpu", "compute=efficiency needs the GPU kind in the gpu column");

  nlohmann::json loader = nlohmann::json::object();
  if (!row.get("loader_workers").empty())
    loader["workers"] = row.integer("loader_workers", 0, 4096);
  if (!row.get("dataset").empty())
    loader["dataset"] = row.get("dataset");

  return {{"name", row.get("id")},
          {"cluster", cluster},
          {"model", row.get("model")},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", row.integer("batch_per_gpu", 1, 1 << 20)}, {"epochs", 1},
            {"precision", row.get("precision")}, {"compute", compute}, {"loader", loader}}},
          {"strategy", {{"kind", row.get("strategy")}}},
          {"gpus", row.integer("gpus", 1, 1 << 20)},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

}  // namespace

std::vector<TrainingRun> validate_training_runs(const std::string& csv_path)
{
  if (std::filesystem::is_directory(csv_path))
    throw InputError(csv_path, "", "is a directory (expected a CSV of measured training runs)");
  std::ifstream in(csv_path);
  if (!in)
    throw InputError(csv_path, "", "cannot open the file (expected a CSV of measured training runs)");
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#')
      continue;
    const auto cells = split_csv(line);
    if (header.empty()) {
      header = cells;
      for (const char* needed : {"id", "cluster", "nodes", "gpus", "model", "precision", "batch_per_gpu", "strategy",
                                 "compute", "measured", "unit"})
        if (std::find(header.begin(), header.end(), needed) == header.end())
          throw InputError(csv_path, "", fmt::format("line {}: the header has no '{}' column", n, needed));
      continue;
    }
    if (cells.size() != header.size())
      throw InputError(csv_path, "", fmt::format("line {}: expected {} cells (as the header), got {}", n, header.size(),
                                                 cells.size()));
    Row row{csv_path, n, {}};
    for (std::size_t i = 0; i < cells.size(); ++i)
      row.cells[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  if (rows.empty())
    throw InputError(csv_path, "", "expected a header line and at least one measured run");

  const std::string dir = std::filesystem::path(csv_path).parent_path().string();
  std::vector<TrainingRun> runs;
  std::map<std::string, std::size_t> by_id;
  for (const Row& row : rows) {
    TrainingRun run;
    run.id = row.get("id");
    if (run.id.empty() || by_id.count(run.id))
      row.fail("id", fmt::format("expected a unique, non-empty id, got '{}'", run.id));
    run.baseline = row.get("baseline");
    run.source = row.get("source");
    const double measured = row.number("measured", 1e-12, 1e15);
    const std::string unit = row.get("unit");
    if (unit != "samples/s" && unit != "s")
      row.fail("unit", fmt::format("expected 'samples/s' or 's', got '{}'", unit));
    run.measured_rate = unit == "s" ? 1.0 / measured : measured;
    const Prediction p =
        predict(parse_scenario(scenario_of(row, dir), fmt::format("{} line {}", csv_path, row.line)));
    run.predicted_rate = p.result.throughput_samples_per_s;
    run.input_bound = p.result.input_bound;
    run.summary = fmt::format("{} {} GPUs {} {} b{}", row.get("strategy"), row.get("gpus"), row.get("model"),
                              row.get("precision"), row.get("batch_per_gpu"));
    if (!run.baseline.empty()) {
      const auto it = by_id.find(run.baseline);
      if (it == by_id.end())
        row.fail("baseline", fmt::format("expected the id of an earlier row, got '{}'", run.baseline));
      const TrainingRun& base = runs[it->second];
      // A time is for the same work as its baseline's: the ratio of rates is the inverse ratio of times.
      run.measured_ratio = run.measured_rate / base.measured_rate;
      run.predicted_ratio = run.predicted_rate / base.predicted_rate;
      run.error = run.predicted_ratio / run.measured_ratio - 1;
    }
    by_id[run.id] = runs.size();
    runs.push_back(run);
  }
  return runs;
}

std::string format_training_runs(const std::vector<TrainingRun>& runs)
{
  std::string out = fmt::format("{:<34} {:<34} {:>9} {:>9} {:>8}\n", "# run", "vs baseline", "measured", "dtsim", "error");
  std::vector<double> errors;
  for (const auto& r : runs) {
    if (r.baseline.empty())
      continue;
    errors.push_back(std::abs(r.error));
    out += fmt::format("{:<34} {:<34} {:>9.3f} {:>9.3f} {:>+7.1f}%{}\n", r.id, r.baseline, r.measured_ratio,
                       r.predicted_ratio, 100 * r.error, r.input_bound ? "  input-bound" : "");
  }
  if (errors.empty())
    return out + "# no row has a baseline to compare with\n";
  std::sort(errors.begin(), errors.end());
  const double median = errors.size() % 2 ? errors[errors.size() / 2]
                                          : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
  out += fmt::format("# {} compared rows: median |error| {:.1f}%, worst {:.1f}%\n", errors.size(), 100 * median,
                     100 * errors.back());
  return out;
}

}  // namespace dtsim
