// See training_run_row.hpp.
#include "sim/predict/training_run_row.hpp"
#include "sim/topology/topology_spec.hpp"

#include "sim/util/json_reader.hpp"
#include "sim/util/text.hpp"

#include <fmt/ranges.h>

#include <cmath>
#include <optional>
#include <set>
#include <vector>

namespace dtsim {

namespace {

/// The model cell: a name, a .json file beside the CSV, or a transformer by its hyperparameters as
/// a JSON object (the scenario's inline model: {"family": "llama", "hidden": ...}).
nlohmann::json model_of(const RunsCsvRow& row, const std::string& csv_dir)
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

}  // namespace

nlohmann::json scenario_of(const RunsCsvRow& row, const std::string& csv_dir)
{
  row.required("cluster", "a topology preset or a .json file");
  nlohmann::json cluster = {{"base", row.file_in("cluster", csv_dir)}, {"nodes", row.integer("nodes", 1, 4096)}};
  if (!row.get("gpu").empty())
    cluster["gpu"] = row.get("gpu");
  if (!row.get("host_cores").empty())
    cluster["host"] = {{"cores", row.integer("host_cores", 1, kMaxHostCores)}};

  nlohmann::json compute;
  const std::string c = row.get("compute");
  const auto eq = c.find('=');
  const std::string kind = c.substr(0, eq);
  if (eq == std::string::npos || (kind != "throughput" && kind != "efficiency" && kind != "step_time"))
    row.fail("compute", fmt::format("expected throughput=SAMPLES_PER_S, efficiency=F, efficiency=calibrate or step_time=S, got '{}'", c));
  const std::string value = c.substr(eq + 1);
  if (kind == "throughput") {
    compute["single_gpu_throughput"] = row.number_in("compute", value, 1e-6, 1e9);
  } else if (kind == "step_time") {
    compute["step_time_s"] = row.number_in("compute", value, 1e-9, 1e6);
  } else {
    if (row.get("gpu").empty())
      row.fail("gpu", "compute=efficiency needs the GPU kind in the gpu column");
    // efficiency=calibrate: found by validate on the row's measurement, or its baseline's (training_runs.cpp);
    // 1 until then.
    const auto given = parse_double(value);
    if (value != kCalibrate && (!given || *given < 1e-3 || *given > 1))
      row.fail("compute", fmt::format("expected efficiency=F with F from 0.001 to 1, or efficiency=calibrate, got '{}'", c));
    const double efficiency = value == kCalibrate ? 1.0 : *given;
    compute = {{"gpu", row.get("gpu")}, {"efficiency", efficiency}};
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
  if (const std::string ac = row.get("activation_checkpointing"); ac == "true" || ac == "false")
    training["activation_checkpointing"] = ac == "true";  // full / none (training_settings.cpp)
  else if (!ac.empty())
    training["activation_checkpointing"] = ac;
  if (!row.get("activation_checkpointing_every").empty())
    training["activation_checkpointing_every"] = row.integer("activation_checkpointing_every", 1, 1000000);
  if (!row.get("optimizer").empty())
    training["optimizer"] = row.get("optimizer");
  if (!row.get("attention").empty())
    training["attention"] = row.get("attention");
  for (const char* column : {"attention_kernel", "loss_dtype", "loss_kernel", "norm_kernel", "host_sync"})
    if (!row.get(column).empty())
      training[column] = row.get(column);
  for (const char* column : {"hold_logits", "compile"}) {
    if (const std::string flag = row.get(column); flag == "true" || flag == "false")
      training[column] = flag == "true";
    else if (!flag.empty())
      training[column] = flag;  // refused by training_settings.cpp, naming the column
  }

  nlohmann::json strategy = {{"kind", row.required("strategy", "single, ddp or dp")}};
  // The strategy's own options, each only where that strategy has it (hybrid: Megatron-LM's).
  const std::string strategy_kind = strategy["kind"];
  for (const char* column :
       {"tensor_parallel", "pipeline_stages", "sequence_parallel", "distributed_optimizer", "virtual_stages", "schedule"}) {
    const std::string name = column;
    const bool sharded_tp = strategy_kind == "fsdp" && (name == "tensor_parallel" || name == "sequence_parallel");
    const bool pipelined = strategy_kind == "hybrid" || (strategy_kind == "pipeline" && name == "schedule") || sharded_tp;
    if (!row.get(column).empty() && !pipelined)
      row.fail(column, fmt::format("expected an empty cell for strategy '{}' ({} is an option of {}), got '{}'", strategy_kind,
                                   column,
                                   name == "schedule"                                             ? "pipeline and hybrid"
                                   : name == "tensor_parallel" || name == "sequence_parallel" ? "hybrid and fsdp"
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
    } catch (const InputError& e) {
      if (!e.pointer().empty())  // a member given twice
        row.fail("strategy_options", fmt::format("at {}: {}", e.pointer(), e.problem()));
      extra = nullptr;
    }
    if (!extra.is_object())
      row.fail("strategy_options", fmt::format("expected a JSON object of the strategy's options, such as "
                                               "{{\"sharding\": \"hybrid_shard\"}}, got '{}'", row.get("strategy_options")));
    for (const auto& [key, option] : extra.items()) {
      if (key == "kind" || strategy.contains(key))
        row.fail("strategy_options", fmt::format("expected options other than kind and the row's own columns, got \"{}\"", key));
      strategy[key] = option;
    }
  }

  nlohmann::json simulation = {{"iterations", 3}, {"warmup", 1}};
  if (!row.get("ranks").empty())  // simulation.ranks: auto | all | representatives (parse_scenario checks it)
    simulation["ranks"] = row.get("ranks");
  return {{"name", row.get("id")},
          {"cluster", cluster},
          {"model", model_of(row, csv_dir)},
          {"training", training},
          {"strategy", strategy},
          {"gpus", row.integer("gpus", 1, 1 << 20)},
          {"simulation", simulation}};
}

/// The row's batch for its summary: "b64", or "mb1 gb512" when given as Megatron-LM gives it.
std::string batch_summary(const RunsCsvRow& row)
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

}  // namespace dtsim
