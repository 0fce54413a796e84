// `dtsim validate RUNS.csv` (training_runs.hpp): each row predicted, calibrated where it asks
// (efficiency=calibrate), judged on its ratio to its baseline; the CSV is read by training_runs_csv.cpp.
#include "sim/predict/training_runs.hpp"

#include "sim/predict/efficiency_calibration.hpp"
#include "sim/predict/predict.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/text_file.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

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
      {"/training/norm_kernel", "norm_kernel"},
      {"/training/host_sync", "host_sync"}, {"/training/hold_logits", "hold_logits"}, {"/training/compile", "compile"},
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
    // A member the strategy needs (zero's "stage") is one the strategy_options object must give.
    if (column == "strategy" && inside.empty() && e.problem().rfind("missing member", 0) == 0)
      fail_in_row(row, "strategy_options", e.problem());
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

/// What validate reads of a row's prediction: its result and memory, not the plan's tasks or the
/// simulation's spans (a calibration keeps one while it makes the next).
struct RowPrediction {
  RunResult result;
  std::vector<GpuMemory> memory;  ///< per GPU, as Plan::memory
  double gpu_memory_bytes = 0;    ///< the cluster GPU's capacity
};

RowPrediction predict_scenario(const TrainingRunRow& row)
{
  const Scenario scenario = parse_training_run(row);
  try {
    Prediction p = predict(scenario);
    return {std::move(p.result), std::move(p.plan.memory), p.topology.gpu.memory_bytes};
  } catch (const InputError& e) {
    rethrow_for_row(e, row);
  }
}

/// The row's prediction; with efficiency=calibrate, at the efficiency found on its measurement (no
/// baseline) or its baseline's (`done` holds the earlier rows, `by_id` indexes them). Sets `run`'s
/// efficiency fields.
RowPrediction predict_row(const TrainingRunRow& row, const std::vector<TrainingRun>& done,
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
  // The solver reports the efficiency it simulated whose rate came nearest the measurement: the
  // prediction kept from there is the row's.
  double kept_efficiency = 0;
  RowPrediction kept;
  const EfficiencyFit fit = calibrate_efficiency(
      [&](double e) {
        RowPrediction p = predict_scenario(at_efficiency(row, e));
        const double rate = p.result.throughput_samples_per_s;
        if (kept_efficiency == 0 || calibration_distance(rate, row.measured_rate) <
                                        calibration_distance(kept.result.throughput_samples_per_s, row.measured_rate)) {
          kept_efficiency = e;
          kept = std::move(p);
        }
        return rate;
      },
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
  // Kept by the solver's own measure, so the same point; simulated again only were they ever to differ.
  return fit.efficiency == kept_efficiency ? std::move(kept) : predict_scenario(at_efficiency(row, fit.efficiency));
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
    const RowPrediction p = predict_row(row, runs, by_id, run);
    run.predicted_rate = p.result.throughput_samples_per_s;
    run.input_bound = p.result.input_bound;
    run.predicted_iteration_s = p.result.iteration_time_s;
    run.predicted_compute_s = p.result.compute_time_s;
    run.predicted_nccl_slowdown_s = p.result.nccl_slowdown_s;
    run.predicted_exposed_comm_s = p.result.exposed_comm_time_s;
    run.predicted_pipeline_bubble_s = p.result.pipeline_bubble_s;
    for (const auto& c : p.result.comm_overlap)
      run.predicted_sharded_comm_in_flight_s += c.in_flight_s;
    run.measured_allocated_gib = row.allocated_gib;
    run.measured_reserved_gib = row.reserved_gib;
    for (const auto& m : p.memory) {
      run.predicted_allocated_gib = std::max(run.predicted_allocated_gib, m.total() / kGiB);
      run.predicted_reserved_gib = std::max(run.predicted_reserved_gib, m.peak_reserved / kGiB);
      run.predicted_device_gib = std::max(run.predicted_device_gib, m.device_used / kGiB);
    }
    run.predicted_fits = p.result.memory_fits;
    run.capacity_gib = p.gpu_memory_bytes / kGiB;
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
