#include "sim/predict/training_runs.hpp"

#include "sim/predict/efficiency_calibration.hpp"
#include "sim/predict/predict.hpp"
#include "sim/predict/training_run_row.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/one_line.hpp"
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
                                           "activation_checkpointing", "activation_checkpointing_every",
                                           "sequence_parallel", "distributed_optimizer",
                                           "virtual_stages",
                                           // any strategy's further options as a JSON object (fsdp, zero: their sharding)
                                           "strategy_options", "optimizer",
                                           // compute=efficiency's time model (training.compute.model) and the
                                           // attention kernel it times (training.attention); the loss's dtype
                                           "compute_model", "attention", "attention_kernel", "loss_dtype", "loss_kernel",
                                           "host_sync", "hold_logits",
                                           // simulation.ranks: folding a symmetric run (a simulator setting)
                                           "ranks",
                                           // measured peak memory per GPU (training_memory.hpp)
                                           "peak_allocated_gib", "peak_reserved_gib"};

bool known_column(const std::string& cell)
{
  return std::find(kColumns.begin(), kColumns.end(), cell) != kColumns.end();
}
/// batch_per_gpu is required unless the header has micro_batch (then each row gives one of the two).
const std::vector<std::string> kRequired = {"id",        "cluster",       "nodes",    "gpus",    "model",   "precision",
                                            "batch_per_gpu", "strategy", "compute", "measured", "unit"};

/// The cells of one CSV record (RFC 4180: a quoted cell may hold commas and "" for a quote; cells
/// are trimmed of spaces outside quotes), or what is wrong with it: a quote left open, or text
/// joined to a quoted part (`"4"0`, `4"0"`: RFC 4180's fields are quoted whole or not at all).
struct CsvRecord {
  std::vector<std::string> cells;
  std::string problem;  ///< empty when the record is well formed
};

CsvRecord split_csv(const std::string& line)
{
  CsvRecord r;
  r.cells.emplace_back();
  bool quoted = false, closed = false;  // inside quotes; after a quoted cell's closing quote
  bool started = false;                 // the cell has begun (text other than leading spaces)
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      r.cells.back() += '"';
      ++i;
    } else if (quoted && c == '"') {
      quoted = false;
      closed = true;
    } else if (quoted) {
      r.cells.back() += c;
    } else if (c == ',') {
      r.cells.emplace_back();
      closed = started = false;
    } else if (c == ' ' || c == '\t') {
      if (started && !closed)
        r.cells.back() += c;
    } else if (closed || (c == '"' && started)) {
      r.problem = fmt::format("cell {}: text joined to a quoted part (expected a cell quoted whole, \"...\", or not "
                              "quoted at all)",
                              r.cells.size());
      return r;
    } else if (c == '"') {
      quoted = started = true;
    } else {
      r.cells.back() += c;
      started = true;
    }
  }
  if (quoted)
    r.problem = "a quoted cell is not closed on its line (expected \"...\" within one line: a cell holds no line break)";
  for (auto& cell : r.cells) {
    const auto first = cell.find_first_not_of(" \t");
    cell = first == std::string::npos ? std::string() : cell.substr(first, cell.find_last_not_of(" \t") - first + 1);
  }
  return r;
}

/// A runs CSV's next line that holds a record (not blank, not a '#' comment), '\r' cut, from `pos`
/// on (a UTF-8 byte-order mark at the start skipped: spreadsheets write one); `n` counts the lines
/// read. Nothing when the text ends.
std::optional<std::string> next_record_line(const std::string& text, std::size_t& pos, int& n)
{
  if (pos == 0 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    pos = 3;
  while (pos < text.size()) {
    ++n;
    auto eol = text.find('\n', pos);
    if (eol == std::string::npos)
      eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos && line[0] != '#')
      return line;
  }
  return std::nullopt;
}

/// The compute cell of the row with id `id`.
std::string rows_compute(const std::vector<RunsCsvRow>& rows, const std::string& id)
{
  for (const auto& r : rows)
    if (r.get("id") == id)
      return r.get("compute");
  return {};
}

}  // namespace

std::vector<TrainingRunRow> read_training_runs(const std::string& text, const std::string& csv_path)
{
  std::vector<std::string> header;
  std::vector<RunsCsvRow> rows;
  std::size_t pos = 0;
  int n = 0;
  while (const auto next = next_record_line(text, pos, n)) {
    const std::string& line = *next;
    // Cells are printed back (ids, summaries): text, not terminal escapes or broken bytes.
    if (has_control_character(line))
      throw InputError(csv_path, "", fmt::format("line {}: a control character (expected text)", n));
    try {
      (void)nlohmann::json(line).dump();  // nlohmann refuses to write what is not UTF-8
    } catch (const nlohmann::json::exception&) {
      throw InputError(csv_path, "", fmt::format("line {}: invalid UTF-8 (expected UTF-8 text)", n));
    }
    if (std::count(line.begin(), line.end(), ',') >= 1000)  // a line of commas is not 67 M cells in memory
      throw InputError(csv_path, "", fmt::format("line {}: 1000 or more commas (expected one cell per column)", n));
    const CsvRecord record = split_csv(line);
    if (!record.problem.empty())
      throw InputError(csv_path, "", fmt::format("line {}: {}", n, record.problem));
    const std::vector<std::string>& cells = record.cells;
    if (header.empty()) {
      header = cells;
      for (std::size_t i = 0; i < header.size(); ++i) {
        if (!known_column(header[i]))
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
    if (cells.size() != header.size())
      throw InputError(csv_path, "", fmt::format("line {}: expected {} cells (as the header), got {}", n, header.size(),
                                                 cells.size()));
    if (rows.size() == kMaxTrainingRuns)
      throw InputError(csv_path, "", fmt::format("line {}: more than {} measured runs (each is a simulation)", n,
                                                 kMaxTrainingRuns));
    RunsCsvRow row{csv_path, n, {}};
    for (std::size_t i = 0; i < cells.size(); ++i)
      row.cells[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  if (rows.empty())
    throw InputError(csv_path, "", "expected a header line and at least one measured run");

  const std::string dir = std::filesystem::path(csv_path).parent_path().string();
  std::vector<TrainingRunRow> out;
  std::set<std::string> ids;
  std::set<std::string> per_batch_times;  // ids of rows whose time was turned into samples/s by their global batch
  std::set<std::string> plain_times;      // ids of rows whose time is for the same work as their baseline's
  std::set<std::string> with_efficiency;  // ids of rows whose compute is an efficiency (given or calibrated)
  for (const RunsCsvRow& row : rows) {
    TrainingRunRow run;
    run.id = row.get("id");
    if (run.id.empty() || ids.count(run.id))
      row.fail("id", fmt::format("expected a unique, non-empty id, got '{}'", run.id));
    run.baseline = row.get("baseline");
    if (!run.baseline.empty() && !ids.count(run.baseline))
      row.fail("baseline", fmt::format("expected the id of an earlier row, got '{}'", run.baseline));
    ids.insert(run.id);
    run.source = row.get("source");
    // Both blank: a run to predict, not measured.
    const bool measured_given = !row.get("measured").empty() || !row.get("unit").empty();
    if (measured_given && row.get("measured").empty())
      row.fail("measured", fmt::format("expected the measured figure in {} (or measured and unit both blank: a run to "
                                       "predict, not measured), got an empty cell",
                                       row.get("unit")));
    const double measured = measured_given ? row.number("measured", 1e-12, 1e15) : 0;
    const std::string unit = measured_given ? row.get("unit") : "samples/s";
    if (unit != "samples/s" && unit != "s" && unit != "tokens/s" && unit != "tokens/s/gpu")
      row.fail("unit", fmt::format("expected 'samples/s', 's', 'tokens/s' or 'tokens/s/gpu', got '{}'", unit));
    run.scenario = scenario_of(row, dir);
    // A time with its global batch is a rate of samples (rows of different batches compare); without,
    // it is for the same work as its baseline's. Tokens: of the whole job, divided by the sequence
    // length once the model is loaded (validate_training_runs).
    const auto& training = run.scenario["training"];
    run.measured_in_tokens = unit.rfind("tokens/", 0) == 0;
    run.measured_rate = unit == "tokens/s/gpu"              ? measured * run.scenario["gpus"].get<double>()
                        : unit != "s" || !measured_given    ? measured
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
    // A time without its global batch is iterations/s: only another such time compares with it.
    const bool plain = plain_times.count(run.id) > 0;
    if (!run.baseline.empty() && plain != (plain_times.count(run.baseline) > 0))
      row.fail("unit", fmt::format("expected a rate comparable with the baseline '{}': {} (give global_batch to "
                                   "turn a time into samples/s)",
                                   run.baseline,
                                   plain ? "this row is a time per iteration without its global batch, the baseline a rate of samples"
                                         : "the baseline is a time per iteration without its global batch, this row a rate of samples"));
    const std::string compute = row.get("compute");
    if (compute.rfind("efficiency=", 0) == 0)
      with_efficiency.insert(run.id);
    run.calibrate_efficiency = compute == "efficiency=" + kCalibrate;
    if (run.calibrate_efficiency && run.baseline.empty() && !measured_given)
      row.fail("measured", "expected the measured rate to calibrate the efficiency on (efficiency=calibrate on a row "
                           "without a baseline), got an empty cell");
    if (run.calibrate_efficiency && run.baseline.empty() && plain) {
      row.fail("compute", "expected a rate to calibrate the efficiency on: unit samples/s, or a time with its "
                          "global_batch (a time alone is for work this row does not state)");
    }
    if (run.calibrate_efficiency && !run.baseline.empty() && !with_efficiency.count(run.baseline))
      row.fail("compute", fmt::format("expected a baseline whose compute is an efficiency to take (efficiency=F or "
                                      "efficiency=calibrate), got the baseline '{}' with compute={}",
                                      run.baseline, rows_compute(rows, run.baseline)));
    for (const auto& [column, field] : {std::pair{"peak_allocated_gib", &run.allocated_gib},
                                        std::pair{"peak_reserved_gib", &run.reserved_gib}})
      if (!row.get(column).empty())
        *field = row.number(column, 1e-3, 1e6);
    // The caching allocator's reserved bytes hold every allocated one: reserved >= allocated.
    if (run.allocated_gib > 0 && run.reserved_gib > 0 && run.reserved_gib < run.allocated_gib)
      row.fail("peak_reserved_gib", fmt::format("expected at least peak_allocated_gib ({}): the allocator's reserved memory "
                                                "holds what it allocated, got {}",
                                                row.get("peak_allocated_gib"), row.get("peak_reserved_gib")));
    run.label = fmt::format("{} line {}", csv_path, row.line);
    for (const auto& [column, cell] : row.cells)
      if (!cell.empty())
        run.columns.insert(column);
    run.summary = fmt::format("{} {} GPUs {} {} {}", row.get("strategy"), row.get("gpus"), row.get("model"),
                              row.get("precision"), batch_summary(row));
    out.push_back(std::move(run));
  }
  return out;
}

namespace {

/// An error in a row's `column` (a problem of its own, not the scenario's), naming the CSV and the line.
[[noreturn]] void fail_in_row(const TrainingRunRow& row, const std::string& column, const std::string& problem)
{
  const std::string csv = row.label.substr(0, row.label.rfind(" line "));
  throw InputError(csv, "", fmt::format("{}, column {}: {}", row.label.substr(csv.size() + 1), column, problem));
}

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
      {"/training/activation_checkpointing_every", "activation_checkpointing_every"},
      {"/training/activation_checkpointing", "activation_checkpointing"},
      {"/strategy/tensor_parallel", "tensor_parallel"}, {"/strategy/pipeline_stages", "pipeline_stages"},
      {"/strategy/schedule", "schedule"}, {"/strategy/sequence_parallel", "sequence_parallel"},
      {"/strategy/distributed_optimizer", "distributed_optimizer"}, {"/strategy/virtual_stages", "virtual_stages"},
      {"/training/compute/model", "compute_model"}, {"/training/attention_kernel", "attention_kernel"},
      {"/training/attention", "attention"},
      {"/training/loss_dtype", "loss_dtype"}, {"/training/loss_kernel", "loss_kernel"},
      {"/training/host_sync", "host_sync"}, {"/training/hold_logits", "hold_logits"},
      {"/simulation/ranks", "ranks"},
      {"/training/compute", "compute"}, {"/training/loader/workers", "loader_workers"},
      {"/training/loader/dataset", "dataset"}, {"/training/loader", "loader_workers"},
      {"/training/optimizer", "optimizer"}, {"/strategy", "strategy"}, {"/gpus", "gpus"}};
  for (const auto& [pointer, column] : columns) {
    // A strategy member whose column the row leaves empty came from strategy_options (below).
    if (e.pointer().rfind(pointer, 0) != 0 || (pointer.rfind("/strategy/", 0) == 0 && !row.columns.count(column)))
      continue;
    // A strategy member no column above sets came from the strategy_options object: name it, and
    // the pointer inside that object.
    const std::string inside = e.pointer().substr(pointer.size());
    if (column == "strategy" && !inside.empty() && inside != "/kind" && inside.rfind("/kind/", 0) != 0)
      fail_in_row(row, "strategy_options", fmt::format("at {}: {}", inside, e.problem()));
    fail_in_row(row, column, e.problem());
  }
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

bool looks_like_training_runs(const std::string& text)
{
  std::size_t pos = 0;
  int n = 0;
  const auto line = next_record_line(text, pos, n);
  if (!line)
    return false;
  const CsvRecord header = split_csv(*line);
  const auto has = [&](const std::string& column) {
    return std::find(header.cells.begin(), header.cells.end(), column) != header.cells.end();
  };
  return header.problem.empty() && has("id") && has("measured") &&
         std::all_of(header.cells.begin(), header.cells.end(), known_column);
}

namespace {

/// The row with a measurement in tokens turned into samples/s: divided by the model's seq_len.
TrainingRunRow in_samples(const TrainingRunRow& row)
{
  if (!row.measured_in_tokens)
    return row;
  const Model model = [&] {
    try {
      return scenario_model(parse_training_run(row));
    } catch (const InputError& e) {
      rethrow_for_row(e, row);
    }
  }();
  const auto seq = model.arch.find("seq_len");
  if (seq == model.arch.end() || seq->second <= 0)
    fail_in_row(row, "unit", fmt::format("expected a model with a sequence length (seq_len) to count its samples in "
                                         "tokens, got the model '{}' without one (give samples/s)",
                                         model.name));
  TrainingRunRow r = row;
  r.measured_rate = row.measured_rate / seq->second;
  r.measured_in_tokens = false;
  return r;
}

/// The row's scenario at compute efficiency `efficiency`.
TrainingRunRow at_efficiency(const TrainingRunRow& row, double efficiency)
{
  TrainingRunRow r = row;
  r.scenario["training"]["compute"]["efficiency"] = efficiency;
  return r;
}

Prediction predict_scenario(const TrainingRunRow& row)
{
  const Scenario scenario = parse_training_run(row);
  try {
    return predict(scenario);
  } catch (const InputError& e) {
    rethrow_for_row(e, row);
  }
}

/// The row's prediction; with efficiency=calibrate, at the efficiency found on its measurement (no
/// baseline) or its baseline's (`done` holds the earlier rows, `by_id` indexes them). Sets `run`'s
/// efficiency fields.
Prediction predict_row(const TrainingRunRow& row, const std::vector<TrainingRun>& done,
                       const std::map<std::string, std::size_t>& by_id, TrainingRun& run)
{
  const auto& compute = row.scenario["training"]["compute"];
  if (!row.calibrate_efficiency) {
    run.efficiency = compute.value("efficiency", 0.0);
    return predict_scenario(row);
  }
  if (!row.baseline.empty()) {
    run.efficiency = done[by_id.at(row.baseline)].efficiency;
    return predict_scenario(at_efficiency(row, run.efficiency));
  }
  const EfficiencyFit fit = calibrate_efficiency(
      [&](double e) { return predict_scenario(at_efficiency(row, e)).result.throughput_samples_per_s; },
      row.measured_rate);
  if (fit.outcome != EfficiencyFit::Outcome::Found)
    fail_in_row(row, "compute",
                fmt::format("efficiency=calibrate found no efficiency from {} to {} that meets the measured {:.6g} "
                            "samples/s: at efficiency {} dtsim gives {:.6g}{}",
                            kLowestEfficiency, kHighestEfficiency, row.measured_rate, fit.efficiency, fit.rate,
                            fit.outcome == EfficiencyFit::Outcome::AboveHighest
                                ? " (communication or the input pipeline bound dtsim's rate, or the measurement is "
                                  "beyond the GPU's peak)"
                                : ""));
  run.efficiency = fit.efficiency;
  run.efficiency_calibrated = true;
  run.calibration_simulations = fit.simulations;
  return predict_scenario(at_efficiency(row, fit.efficiency));
}

}  // namespace

std::vector<TrainingRun> validate_training_runs(const std::string& csv_path)
{
  return validate_training_runs(read_input_file(csv_path, "a CSV of measured training runs"), csv_path);
}

std::vector<TrainingRun> validate_training_runs(const std::string& text, const std::string& csv_path)
{
  const auto rows = read_training_runs(text, csv_path);
  std::vector<TrainingRun> runs;
  std::map<std::string, std::size_t> by_id;
  for (const TrainingRunRow& read : rows) {
    const TrainingRunRow row = in_samples(read);
    TrainingRun run;
    run.id = row.id;
    run.baseline = row.baseline;
    run.source = row.source;
    run.summary = row.summary;
    run.measured_rate = row.measured_rate;
    const Prediction p = predict_row(row, runs, by_id, run);
    run.predicted_rate = p.result.throughput_samples_per_s;
    run.input_bound = p.result.input_bound;
    run.predicted_iteration_s = p.result.iteration_time_s;
    run.predicted_compute_s = p.result.compute_time_s;
    run.predicted_nccl_slowdown_s = p.result.nccl_slowdown_s;
    run.predicted_exposed_comm_s = p.result.exposed_comm_time_s;
    for (const auto& c : p.result.comm_overlap)
      run.predicted_sharded_comm_in_flight_s += c.in_flight_s;
    run.measured_allocated_gib = row.allocated_gib;
    run.measured_reserved_gib = row.reserved_gib;
    for (const auto& m : p.plan.memory) {
      run.predicted_allocated_gib = std::max(run.predicted_allocated_gib, m.total() / kGiB);
      run.predicted_reserved_gib = std::max(run.predicted_reserved_gib, m.peak_reserved / kGiB);
      run.predicted_device_gib = std::max(run.predicted_device_gib, m.device_used / kGiB);
    }
    run.predicted_fits = p.result.memory_fits;
    run.capacity_gib = p.topology.gpu.memory_bytes / kGiB;
    if (!run.baseline.empty()) {
      const TrainingRun& base = runs[by_id.at(run.baseline)];
      // A time is for the same work as its baseline's: the ratio of rates is the inverse ratio of times.
      run.predicted_ratio = run.predicted_rate / base.predicted_rate;
      run.compared = run.measured_rate > 0 && base.measured_rate > 0;
      if (run.compared) {
        run.measured_ratio = run.measured_rate / base.measured_rate;
        run.error = run.predicted_ratio / run.measured_ratio - 1;
      }
    }
    by_id[run.id] = runs.size();
    runs.push_back(run);
  }
  return runs;
}

AbsErrorSummary compared_errors(const std::vector<TrainingRun>& runs)
{
  std::vector<double> errors;
  for (const auto& r : runs)
    if (r.compared)
      errors.push_back(r.error);
  return summarize_abs_errors(std::move(errors));
}

std::string format_training_runs(const std::vector<TrainingRun>& runs)
{
  std::string out = fmt::format("{:<34} {:<34} {:>9} {:>9} {:>8}\n", "# run", "vs baseline", "measured", "dtsim", "error");
  for (const auto& r : runs) {
    if (!r.compared)
      continue;
    out += fmt::format("{:<34} {:<34} {:>9.3f} {:>9.3f} {:>+7.1f}%{}\n", r.id, r.baseline, r.measured_ratio,
                       r.predicted_ratio, 100 * r.error, r.input_bound ? "  input-bound" : "");
  }
  for (const auto& r : runs)
    if (r.efficiency_calibrated)
      out += fmt::format("# {}: compute efficiency {:.4f} calibrated on its measured {:.6g} samples/s ({} simulations)\n",
                         r.id, r.efficiency, r.measured_rate, r.calibration_simulations);
  for (const auto& r : runs) {
    if (r.measured_rate > 0 && !r.baseline.empty() && !r.compared)
      out += fmt::format("# {}: its baseline {} is not measured; dtsim {:.6g} samples/s, measured {:.6g}\n", r.id,
                         r.baseline, r.predicted_rate, r.measured_rate);
    if (r.measured_rate > 0)
      continue;
    out += fmt::format("# {}: not measured; dtsim {:.6g} samples/s{}{}, {}\n", r.id, r.predicted_rate,
                       r.baseline.empty() ? "" : fmt::format(", {:.3f} x its baseline {}", r.predicted_ratio, r.baseline),
                       r.input_bound ? ", input-bound" : "",
                       r.predicted_fits ? fmt::format("fits ({:.1f} of {:.1f} GiB)", r.predicted_device_gib, r.capacity_gib)
                                        : fmt::format("does not fit ({:.1f} of {:.1f} GiB)", r.predicted_device_gib,
                                                      r.capacity_gib));
  }
  const AbsErrorSummary e = compared_errors(runs);
  if (e.count == 0)
    return out + "# no measured row has a measured baseline to compare with\n";
  return out + fmt::format("# {} compared rows: median |error| {:.1f}%, worst {:.1f}%\n", e.count, 100 * e.median,
                           100 * e.worst);
}

}  // namespace dtsim
