// Reading a runs CSV (training_runs.hpp): RFC 4180 records, the header's known columns, each row's
// cells checked and turned into its scenario (training_run_scenario.cpp); validation is training_runs.cpp.
#include "sim/predict/training_runs.hpp"

#include "sim/predict/training_run_row.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/one_line.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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
                                           "compute_model", "attention", "attention_kernel", "loss_dtype", "loss_kernel", "norm_kernel",
                                           "host_sync", "hold_logits", "compile",
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
    // An invisible byte-order mark past the file's start (files joined, or written line by line with one each)
    // would stick to a cell: "expected the id of an earlier row, got 'a1'" of a row whose id reads 'a1'.
    if (line.find("\xEF\xBB\xBF") != std::string::npos)
      throw InputError(csv_path, "", fmt::format("line {}: a byte-order mark (U+FEFF) inside the file (expected one at "
                                                 "most, at the very start)", n));
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
  std::map<std::string, std::string> compute_of;  // the compute cell of every earlier row, by id
  std::set<std::string> per_batch_times;  // ids of rows whose time was turned into samples/s by their global batch
  std::set<std::string> plain_times;      // ids of rows whose time is for the same work as their baseline's
  for (const RunsCsvRow& row : rows) {
    TrainingRunRow run;
    run.id = row.get("id");
    if (run.id.empty() || compute_of.count(run.id))
      row.fail("id", fmt::format("expected a unique, non-empty id, got '{}'", run.id));
    run.baseline = row.get("baseline");
    if (!run.baseline.empty() && !compute_of.count(run.baseline))
      row.fail("baseline", fmt::format("expected the id of an earlier row, got '{}'", run.baseline));
    const std::string compute = row.get("compute");
    compute_of[run.id] = compute;
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
    run.calibrate_efficiency = compute == "efficiency=" + kCalibrate;
    if (run.calibrate_efficiency && run.baseline.empty() && !measured_given)
      row.fail("measured", "expected the measured rate to calibrate the efficiency on (efficiency=calibrate on a row "
                           "without a baseline), got an empty cell");
    if (run.calibrate_efficiency && run.baseline.empty() && plain) {
      row.fail("compute", "expected a rate to calibrate the efficiency on: unit samples/s, or a time with its "
                          "global_batch (a time alone is for work this row does not state)");
    }
    if (run.calibrate_efficiency && !run.baseline.empty() && compute_of[run.baseline].rfind("efficiency=", 0) != 0)
      row.fail("compute", fmt::format("expected a baseline whose compute is an efficiency to take (efficiency=F or "
                                      "efficiency=calibrate), got the baseline '{}' with compute={}",
                                      run.baseline, compute_of[run.baseline]));
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

}  // namespace dtsim
