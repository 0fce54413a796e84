#include "sim/predict/training_runs.hpp"

#include "sim/predict/predict.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/text.hpp"
#include "sim/util/text_file.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace dtsim {

namespace {

/// Every column a runs CSV may have (training_runs.hpp); any other is a typo.
const std::vector<std::string> kColumns = {"id",      "baseline",      "cluster",  "gpu",            "host_cores",
                                           "nodes",   "gpus",          "model",    "precision",      "batch_per_gpu",
                                           "strategy", "loader_workers", "dataset", "compute",       "measured",
                                           "unit",    "source",
                                           // Megatron-LM runs (optional; see training_runs.hpp)
                                           "tensor_parallel", "pipeline_stages", "micro_batch", "global_batch", "schedule",
                                           "activation_checkpointing", "sequence_parallel", "distributed_optimizer",
                                           "virtual_stages",
                                           // any strategy's further options as a JSON object (fsdp, zero: their sharding)
                                           "strategy_options", "optimizer",
                                           // compute=efficiency's time model (training.compute.model) and the
                                           // attention kernel it times (training.attention); the loss's dtype
                                           "compute_model", "attention", "loss_dtype", "host_sync",
                                           // measured peak memory per GPU (training_memory.hpp)
                                           "peak_allocated_gib", "peak_reserved_gib"};
/// batch_per_gpu is required unless the header has micro_batch (then each row gives one of the two).
const std::vector<std::string> kRequired = {"id",        "cluster",       "nodes",    "gpus",    "model",   "precision",
                                            "batch_per_gpu", "strategy", "compute", "measured", "unit"};

/// The cells of one CSV record (RFC 4180: a quoted cell may hold commas and "" for a quote; cells
/// are trimmed of spaces outside quotes). std::nullopt when a quote is left open.
std::optional<std::vector<std::string>> split_csv(const std::string& line)
{
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  if (quoted)
    return std::nullopt;
  for (auto& cell : out) {
    const auto first = cell.find_first_not_of(" \t");
    cell = first == std::string::npos ? std::string() : cell.substr(first, cell.find_last_not_of(" \t") - first + 1);
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
    return number_in(column, get(column), low, high);
  }
  double number_in(const std::string& column, const std::string& text, double low, double high) const
  {
    const auto v = parse_double(text);
    if (!v || *v < low || *v > high)
      fail(column, fmt::format("expected a number from {} to {}, got '{}'", low, high, text));
    return *v;
  }
  /// "true" or "false" (blank cells are the caller's: not given).
  bool boolean(const std::string& column) const
  {
    const std::string v = get(column);
    if (v != "true" && v != "false")
      fail(column, fmt::format("expected true or false, got '{}'", v));
    return v == "true";
  }
  int integer(const std::string& column, int low, int high) const
  {
    const auto v = parse_int(get(column), low, high);
    if (!v)
      fail(column, fmt::format("expected a whole number from {} to {}, got '{}'", low, high, get(column)));
    return static_cast<int>(*v);
  }
  /// A non-empty cell (the value is checked where it is used: a preset, a model, a strategy).
  std::string required(const std::string& column, const std::string& expected) const
  {
    const std::string v = get(column);
    if (v.empty())
      fail(column, fmt::format("expected {}, got an empty cell", expected));
    return v;
  }
  /// A .json file named by the cell, relative to the CSV's folder and inside it; other text as is.
  std::string file_in(const std::string& column, const std::string& csv_dir) const
  {
    const std::string v = get(column);
    if (v.size() < 5 || v.compare(v.size() - 5, 5, ".json") != 0)
      return v;
    const std::filesystem::path rel = std::filesystem::path(v).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == "..")
      fail(column, fmt::format("expected a .json file inside the CSV's folder (a path relative to it, without ..), got '{}'", v));
    const std::filesystem::path file = std::filesystem::path(csv_dir) / rel;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      fail(column, fmt::format("no file '{}' in the CSV's folder (expected a .json file beside the CSV, or a preset name)", v));
    return file.string();
  }
};

/// The model cell: a name, a .json file beside the CSV, or a transformer by its hyperparameters as
/// a JSON object (the scenario's inline model: {"family": "llama", "hidden": ...}).
nlohmann::json model_of(const Row& row, const std::string& csv_dir)
{
  const std::string v = row.get("model");
  if (v.empty() || v.front() != '{')
    return row.file_in("model", csv_dir);
  nlohmann::json inline_model;
  try {
    inline_model = parse_json_text(v, "model");  // nesting and magnitude checked
  } catch (const InputError&) {
    inline_model = nullptr;
  }
  if (!inline_model.is_object())
    row.fail("model", fmt::format("expected a model name, a .json file or a JSON object such as {{\"family\": \"llama\", "
                                  "\"hidden\": 4096, ...}}, got '{}'", v));
  return inline_model;
}

nlohmann::json scenario_of(const Row& row, const std::string& csv_dir)
{
  row.required("cluster", "a topology preset or a .json file");
  nlohmann::json cluster = {{"base", row.file_in("cluster", csv_dir)}, {"nodes", row.integer("nodes", 1, 4096)}};
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
  const std::string value = c.substr(eq + 1);
  if (kind == "throughput") {
    compute["single_gpu_throughput"] = row.number_in("compute", value, 1e-6, 1e9);
  } else if (kind == "step_time") {
    compute["step_time_s"] = row.number_in("compute", value, 1e-9, 1e6);
  } else {
    if (row.get("gpu").empty())
      row.fail("gpu", "compute=efficiency needs the GPU kind in the gpu column");
    compute = {{"gpu", row.get("gpu")}, {"efficiency", row.number_in("compute", value, 1e-3, 1)}};
  }
  if (!row.get("compute_model").empty()) {
    if (kind != "efficiency")
      row.fail("compute_model", fmt::format("expected an empty cell beside compute={} (the compute model times FLOPs: "
                                            "compute=efficiency=F), got '{}'",
                                            kind, row.get("compute_model")));
    compute["model"] = row.get("compute_model");
  }

  nlohmann::json loader = nlohmann::json::object();
  if (!row.get("loader_workers").empty())
    loader["workers"] = row.integer("loader_workers", 0, 4096);
  if (!row.get("dataset").empty())
    loader["dataset"] = row.get("dataset");

  nlohmann::json training = {{"dataset_samples", 1281167}, {"epochs", 1}};
  // The batch as Megatron-LM gives it (micro_batch, global_batch), or the older batch_per_gpu.
  if (!row.get("micro_batch").empty()) {
    if (!row.get("batch_per_gpu").empty())
      row.fail("batch_per_gpu", fmt::format("expected an empty cell beside micro_batch (give the batch one way: "
                                            "micro_batch and global_batch, or batch_per_gpu), got '{}'",
                                            row.get("batch_per_gpu")));
    training["micro_batch"] = row.integer("micro_batch", 1, 1 << 20);
    if (!row.get("global_batch").empty())
      training["global_batch"] = row.integer("global_batch", 1, 1 << 30);
  } else if (!row.get("global_batch").empty()) {
    row.fail("global_batch", "expected micro_batch beside global_batch (the samples one data-parallel replica runs "
                             "per micro-step), got an empty micro_batch cell");
  } else {
    training["batch_per_gpu"] = row.integer("batch_per_gpu", 1, 1 << 20);
  }
  training["precision"] = row.required("precision", "a precision such as fp32, tf32 or amp");
  training["compute"] = compute;
  training["loader"] = loader;
  if (!row.get("activation_checkpointing").empty())
    training["activation_checkpointing"] = row.get("activation_checkpointing");
  if (!row.get("optimizer").empty())
    training["optimizer"] = row.get("optimizer");
  if (!row.get("attention").empty())
    training["attention"] = row.get("attention");
  for (const char* column : {"loss_dtype", "host_sync"})
    if (!row.get(column).empty())
      training[column] = row.get(column);

  nlohmann::json strategy = {{"kind", row.required("strategy", "single, ddp or dp")}};
  // The strategy's own options, each only where that strategy has it (hybrid: Megatron-LM's).
  const std::string strategy_kind = strategy["kind"];
  for (const char* column :
       {"tensor_parallel", "pipeline_stages", "sequence_parallel", "distributed_optimizer", "virtual_stages", "schedule"}) {
    const std::string c = column;
    const bool sharded_tp = strategy_kind == "fsdp" && (c == "tensor_parallel" || c == "sequence_parallel");
    const bool pipelined = strategy_kind == "hybrid" || (strategy_kind == "pipeline" && c == "schedule") || sharded_tp;
    if (!row.get(column).empty() && !pipelined)
      row.fail(column, fmt::format("expected an empty cell for strategy '{}' ({} is an option of {}), got '{}'", strategy_kind,
                                   column,
                                   c == "schedule"                                             ? "pipeline and hybrid"
                                   : c == "tensor_parallel" || c == "sequence_parallel" ? "hybrid and fsdp"
                                                                                               : "hybrid",
                                   row.get(column)));
  }
  if (!row.get("tensor_parallel").empty())
    strategy["tensor_parallel"] = row.integer("tensor_parallel", 1, 1 << 20);
  if (!row.get("pipeline_stages").empty())
    strategy["pipeline_stages"] = row.integer("pipeline_stages", 1, 1 << 20);
  if (!row.get("schedule").empty())
    strategy["schedule"] = row.get("schedule");
  if (!row.get("sequence_parallel").empty())
    strategy["sequence_parallel"] = row.boolean("sequence_parallel");
  if (!row.get("distributed_optimizer").empty())
    strategy["distributed_optimizer"] = row.boolean("distributed_optimizer");
  if (!row.get("virtual_stages").empty())
    strategy["virtual_stages"] = row.integer("virtual_stages", 1, 1024);
  if (!row.get("strategy_options").empty()) {
    nlohmann::json extra;
    try {
      extra = parse_json_text(row.get("strategy_options"), "strategy_options");  // nesting and magnitude checked
    } catch (const InputError&) {
      extra = nullptr;
    }
    if (!extra.is_object())
      row.fail("strategy_options", fmt::format("expected a JSON object of the strategy's options, such as "
                                               "{{\"sharding\": \"hybrid_shard\"}}, got '{}'", row.get("strategy_options")));
    for (const auto& [key, value] : extra.items()) {
      if (key == "kind" || strategy.contains(key))
        row.fail("strategy_options", fmt::format("expected options other than kind and the row's own columns, got \"{}\"", key));
      strategy[key] = value;
    }
  }

  return {{"name", row.get("id")},
          {"cluster", cluster},
          {"model", model_of(row, csv_dir)},
          {"training", training},
          {"strategy", strategy},
          {"gpus", row.integer("gpus", 1, 1 << 20)},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

/// The row's batch for its summary: "b64", or "mb1 gb512" when given as Megatron-LM gives it.
std::string batch_summary(const Row& row)
{
  if (row.get("micro_batch").empty())
    return "b" + row.get("batch_per_gpu");
  std::string out = "mb" + row.get("micro_batch");
  if (!row.get("global_batch").empty())
    out += " gb" + row.get("global_batch");
  for (const char* column : {"tensor_parallel", "pipeline_stages"})
    if (!row.get(column).empty())
      out += fmt::format(" {}{}", std::string(column) == "tensor_parallel" ? "tp" : "pp", row.get(column));
  return out;
}

}  // namespace

std::vector<TrainingRunRow> read_training_runs(const std::string& text, const std::string& csv_path)
{
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::size_t pos = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte-order mark (spreadsheets)
  for (int n = 1; pos < text.size(); ++n) {
    auto eol = text.find('\n', pos);
    if (eol == std::string::npos)
      eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || line[0] == '#')
      continue;
    // Cells are printed back (ids, summaries): text, not terminal escapes or broken bytes.
    if (std::any_of(line.begin(), line.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return (u < 0x20 && c != '\t') || u == 0x7f;
        }))
      throw InputError(csv_path, "", fmt::format("line {}: a control character (expected text)", n));
    try {
      (void)nlohmann::json(line).dump();  // nlohmann refuses to write what is not UTF-8
    } catch (const nlohmann::json::exception&) {
      throw InputError(csv_path, "", fmt::format("line {}: invalid UTF-8 (expected UTF-8 text)", n));
    }
    if (std::count(line.begin(), line.end(), ',') >= 1000)  // a line of commas is not 67 M cells in memory
      throw InputError(csv_path, "", fmt::format("line {}: 1000 or more commas (expected one cell per column)", n));
    const auto cells = split_csv(line);
    if (!cells)
      throw InputError(csv_path, "", fmt::format("line {}: a quoted cell is not closed (expected \"...\")", n));
    if (header.empty()) {
      header = *cells;
      for (std::size_t i = 0; i < header.size(); ++i) {
        if (std::find(kColumns.begin(), kColumns.end(), header[i]) == kColumns.end())
          throw InputError(csv_path, "", fmt::format("line {}: unknown column '{}' (expected columns among {})", n,
                                                     header[i], fmt::join(kColumns, ", ")));
        if (std::find(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(i), header[i]) !=
            header.begin() + static_cast<std::ptrdiff_t>(i))
          throw InputError(csv_path, "", fmt::format("line {}: column '{}' appears twice in the header", n, header[i]));
      }
      const bool micro = std::find(header.begin(), header.end(), "micro_batch") != header.end();
      for (const auto& needed : kRequired)
        if (std::find(header.begin(), header.end(), needed) == header.end() && !(micro && needed == "batch_per_gpu"))
          throw InputError(csv_path, "", fmt::format("line {}: the header has no '{}' column", n, needed));
      continue;
    }
    if (cells->size() != header.size())
      throw InputError(csv_path, "", fmt::format("line {}: expected {} cells (as the header), got {}", n, header.size(),
                                                 cells->size()));
    if (rows.size() == kMaxTrainingRuns)
      throw InputError(csv_path, "", fmt::format("line {}: more than {} measured runs (each is a simulation)", n,
                                                 kMaxTrainingRuns));
    Row row{csv_path, n, {}};
    for (std::size_t i = 0; i < cells->size(); ++i)
      row.cells[header[i]] = (*cells)[i];
    rows.push_back(std::move(row));
  }
  if (rows.empty())
    throw InputError(csv_path, "", "expected a header line and at least one measured run");

  const std::string dir = std::filesystem::path(csv_path).parent_path().string();
  std::vector<TrainingRunRow> out;
  std::set<std::string> ids;
  std::set<std::string> per_batch_times;  // ids of rows whose time was turned into samples/s by their global batch
  std::set<std::string> plain_times;      // ids of rows whose time is for the same work as their baseline's
  for (const Row& row : rows) {
    TrainingRunRow run;
    run.id = row.get("id");
    if (run.id.empty() || ids.count(run.id))
      row.fail("id", fmt::format("expected a unique, non-empty id, got '{}'", run.id));
    run.baseline = row.get("baseline");
    if (!run.baseline.empty() && !ids.count(run.baseline))
      row.fail("baseline", fmt::format("expected the id of an earlier row, got '{}'", run.baseline));
    ids.insert(run.id);
    run.source = row.get("source");
    const double measured = row.number("measured", 1e-12, 1e15);
    const std::string unit = row.get("unit");
    if (unit != "samples/s" && unit != "s")
      row.fail("unit", fmt::format("expected 'samples/s' or 's', got '{}'", unit));
    run.scenario = scenario_of(row, dir);
    // A time with its global batch is a rate of samples (rows of different batches compare); without,
    // it is for the same work as its baseline's.
    const auto& training = run.scenario["training"];
    run.measured_rate = unit != "s"                          ? measured
                        : training.contains("global_batch") ? training["global_batch"].get<double>() / measured
                                                             : 1.0 / measured;
    if (unit == "s") {
      const bool per_batch = training.contains("global_batch");
      if (!run.baseline.empty() && (per_batch ? plain_times : per_batch_times).count(run.baseline))
        row.fail("global_batch", fmt::format("expected a global_batch in both this time and its baseline '{}', or in "
                                             "neither (a time with its global batch is compared as samples/s)",
                                             run.baseline));
      (per_batch ? per_batch_times : plain_times).insert(run.id);
    }
    for (const auto& [column, field] : {std::pair{"peak_allocated_gib", &run.allocated_gib},
                                        std::pair{"peak_reserved_gib", &run.reserved_gib}})
      if (!row.get(column).empty())
        *field = row.number(column, 1e-3, 1e6);
    run.label = fmt::format("{} line {}", csv_path, row.line);
    run.summary = fmt::format("{} {} GPUs {} {} {}", row.get("strategy"), row.get("gpus"), row.get("model"),
                              row.get("precision"), batch_summary(row));
    out.push_back(std::move(run));
  }
  return out;
}

namespace {

/// An error of the scenario built from a row, as an error of the row: the CSV, the line and the
/// column the value came from. Errors of other files (a topology, a model) are thrown as they are.
[[noreturn]] void rethrow_for_row(const InputError& e, const TrainingRunRow& row)
{
  if (e.file() != row.label)
    throw e;  // a topology or model file's own error names that file
  // The scenario is built from the row: name the column the value came from.
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"/cluster/base", "cluster"},    {"/cluster/nodes", "nodes"},           {"/cluster/gpu", "gpu"},
      {"/cluster/host", "host_cores"}, {"/cluster", "cluster"},               {"/model", "model"},
      {"/training/precision", "precision"}, {"/training/batch_per_gpu", "batch_per_gpu"},
      {"/training/micro_batch", "micro_batch"}, {"/training/global_batch", "global_batch"},
      {"/training/activation_checkpointing", "activation_checkpointing"},
      {"/strategy/tensor_parallel", "tensor_parallel"}, {"/strategy/pipeline_stages", "pipeline_stages"},
      {"/strategy/schedule", "schedule"}, {"/strategy/sequence_parallel", "sequence_parallel"},
      {"/strategy/distributed_optimizer", "distributed_optimizer"}, {"/strategy/virtual_stages", "virtual_stages"},
      {"/training/compute/model", "compute_model"}, {"/training/attention", "attention"},
      {"/training/loss_dtype", "loss_dtype"}, {"/training/host_sync", "host_sync"},
      {"/training/compute", "compute"}, {"/training/loader/workers", "loader_workers"},
      {"/training/loader/dataset", "dataset"}, {"/training/loader", "loader_workers"}, {"/strategy", "strategy"},
      {"/gpus", "gpus"}};
  const std::string csv = row.label.substr(0, row.label.rfind(" line "));
  for (const auto& [pointer, column] : columns)
    if (e.pointer().rfind(pointer, 0) == 0)
      throw InputError(csv, "", fmt::format("{}, column {}: {}", row.label.substr(csv.size() + 1), column, e.problem()));
  throw e;
}

}  // namespace

Scenario parse_training_run(const TrainingRunRow& row)
{
  try {
    return parse_scenario(row.scenario, row.label);
  } catch (const InputError& e) {
    rethrow_for_row(e, row);
  }
}

std::vector<TrainingRun> validate_training_runs(const std::string& csv_path)
{
  const auto rows = read_training_runs(read_input_file(csv_path, "a CSV of measured training runs"), csv_path);
  std::vector<TrainingRun> runs;
  std::map<std::string, std::size_t> by_id;
  for (const auto& row : rows) {
    TrainingRun run;
    run.id = row.id;
    run.baseline = row.baseline;
    run.source = row.source;
    run.summary = row.summary;
    run.measured_rate = row.measured_rate;
    const Scenario scenario = parse_training_run(row);
    const Prediction p = [&] {
      try {
        return predict(scenario);
      } catch (const InputError& e) {
        rethrow_for_row(e, row);
      }
    }();
    run.predicted_rate = p.result.throughput_samples_per_s;
    run.input_bound = p.result.input_bound;
    run.measured_allocated_gib = row.allocated_gib;
    run.measured_reserved_gib = row.reserved_gib;
    for (const auto& m : p.plan.memory) {
      run.predicted_allocated_gib = std::max(run.predicted_allocated_gib, m.total() / kGiB);
      run.predicted_reserved_gib = std::max(run.predicted_reserved_gib, m.peak_reserved / kGiB);
    }
    if (!run.baseline.empty()) {
      const TrainingRun& base = runs[by_id.at(run.baseline)];
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
