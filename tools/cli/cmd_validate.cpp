// dtsim validate LOG --topology NAME|FILE [--nodes N] [--calibration FILE] [--algo A] [--proto P] [--gpu-order 0,2,1,..] [--json]
// dtsim validate RUNS.csv [--json]: measured training runs against predictions (sim/predict/training_runs.hpp)
// nccl-tests logs (under the NCCL_ALGO / NCCL_PROTO their header records, or --algo / --proto): row by row, measured and predicted time and busbw with the error, then the
// median |error| for sizes >= 1 MiB and below. Bandwidth logs (p2p matrices): each measured GPU
// pair beside the bandwidth of its route in the topology, and the median |error|.
#include "sim/predict/training_memory.hpp"
#include "sim/predict/training_runs.hpp"
#include "tools/cli/command.hpp"
#include "sim/util/text_file.hpp"

#include "calibration/bandwidth_validate.hpp"
#include "calibration/calibration_coverage.hpp"
#include "calibration/calibration_file.hpp"
#include "calibration/calibration_inputs.hpp"
#include "calibration/nccl_fit.hpp"
#include "sim/collectives/nccl_env.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

namespace dtsim::cli {

namespace {
struct ValidateArgs {
  std::string log, topology, calibration, algo, proto, gpu_order;
  std::optional<int> nodes;  // unset: the topology's
  bool json = false;
};

std::vector<int> parse_gpu_order(const std::string& text)
{
  std::vector<int> order;
  if (text.empty())
    return order;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const auto v = parse_int(std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                             0, 1 << 20);
    if (!v)
      throw InputError("--gpu-order", "", fmt::format("expected GPU numbers such as 0,2,1,3, got \"{}\"", text));
    order.push_back(static_cast<int>(*v));
    if (comma == std::string::npos)
      return order;
    start = comma + 1;
  }
}

nlohmann::json training_runs_json(const std::string& file, const std::vector<TrainingRun>& runs)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : runs) {
    rows.push_back({{"id", r.id}, {"baseline", r.baseline}, {"summary", r.summary}, {"source", r.source},
                    {"measured_rate", r.measured_rate}, {"predicted_rate", r.predicted_rate},
                    {"measured_ratio", r.measured_ratio}, {"predicted_ratio", r.predicted_ratio},
                    {"error", r.compared ? nlohmann::json(r.error) : nlohmann::json()}, {"compared", r.compared},
                    {"input_bound", r.input_bound},
                    {"efficiency", r.efficiency > 0 ? nlohmann::json(r.efficiency) : nlohmann::json()},
                    {"efficiency_calibrated", r.efficiency_calibrated},
                    {"predicted_iteration_s", r.predicted_iteration_s},
                    {"predicted_compute_s", r.predicted_compute_s},
                    {"predicted_nccl_slowdown_s", r.predicted_nccl_slowdown_s},
                    {"predicted_exposed_comm_s", r.predicted_exposed_comm_s},
                    {"predicted_pipeline_bubble_s", r.predicted_pipeline_bubble_s},
                    {"predicted_sharded_comm_in_flight_s", r.predicted_sharded_comm_in_flight_s},
                    {"predicted_allocated_gib", r.predicted_allocated_gib}, {"predicted_reserved_gib", r.predicted_reserved_gib},
                    {"predicted_device_gib", r.predicted_device_gib}, {"capacity_gib", r.capacity_gib}});
  }
  const AbsErrorSummary e = compared_errors(runs);
  nlohmann::json median, worst;  // null when no row has a baseline
  if (e.count > 0) {
    median = e.median;
    worst = e.worst;
  }
  return {{"kind", "training_runs"}, {"file", file}, {"rows", rows}, {"compared_rows", e.count},
          {"median_abs_error", median}, {"worst_abs_error", worst}, {"memory", training_memory_json(runs)}};
}

nlohmann::json bandwidth_json(const calibration::BandwidthValidation& v)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.rows)
    rows.push_back({{"src", r.src}, {"dst", r.dst}, {"topology_src", r.topology_src}, {"topology_dst", r.topology_dst},
                    {"measured_GBps", r.measured_GBps}, {"predicted_GBps", r.predicted_GBps}, {"error", r.error}});
  return {{"what", v.what}, {"gpu_order", v.gpu_order}, {"rows", rows}, {"median_abs_error", v.median_abs_error}};
}

nlohmann::json nccl_json(const NcclTestsLog& log, const ValidationResult& result)
{
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : result.rows)
    rows.push_back({{"bytes", r.size}, {"measured_us", r.measured_us}, {"predicted_us", r.predicted_us},
                    {"measured_busbw_GBps", r.measured_busbw}, {"predicted_busbw_GBps", r.predicted_busbw},
                    {"busbw_error", r.busbw_error}, {"algorithm", r.algorithm}});
  const auto or_null = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  return {{"op", log.op}, {"ranks", log.ranks}, {"gpus_per_thread", result.gpus_per_thread},
          {"nccl_env", describe_nccl_env(log.nccl_env)}, {"rows", rows},
          {"median_abs_busbw_error_large", or_null(result.median_abs_error_large)},
          {"median_abs_busbw_error_small", or_null(result.median_abs_error_small)}};
}
}  // namespace

void add_validate_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "Compare a measured nccl-tests log or GPU-to-GPU bandwidth matrix with dtsim's prediction");
  cmd->add_option("log", args->log, "nccl-tests output (all_reduce_perf, ...), bandwidth log, or a .csv of measured training runs")->required();
  cmd->add_option("--topology", args->topology, "preset name or topology .json file (for nccl-tests and bandwidth logs)");
  cmd->add_option("--nodes", args->nodes, "number of nodes");
  cmd->add_option("--calibration", args->calibration, "calibration .json");
  cmd->add_option("--algo", args->algo, "NCCL_ALGO of the measured run, when the log does not say it");
  cmd->add_option("--proto", args->proto, "NCCL_PROTO of the measured run, when the log does not say it");
  cmd->add_option("--gpu-order", args->gpu_order,
                  "bandwidth matrix: the topology's GPU (of node 0) for each GPU of the log, e.g. 0,2,1,3 "
                  "(a machine that numbers its GPUs differently from the preset)");
  cmd->add_flag("--json", args->json, "Print the comparison as JSON");
  cmd->callback([&action, args] {
    action = [args] {
      // A runs CSV by its header, whatever its name (a pipe, a .txt); a .csv without --topology is
      // read as one, so that its errors are a runs CSV's.
      const bool named_csv = args->log.size() > 4 && args->log.compare(args->log.size() - 4, 4, ".csv") == 0;
      const std::string text = read_input_file(args->log, named_csv ? "a CSV of measured training runs" : "a measurement log");
      if (looks_like_training_runs(text) || (named_csv && args->topology.empty())) {
        // A runs CSV describes each run's machine in its rows; these options would be ignored.
        for (const auto& [given, name] : {std::pair{!args->topology.empty(), "--topology"},
                                          std::pair{!args->calibration.empty(), "--calibration"},
                                          std::pair{args->nodes.has_value(), "--nodes"}, std::pair{!args->algo.empty(), "--algo"},
                                          std::pair{!args->proto.empty(), "--proto"},
                                          std::pair{!args->gpu_order.empty(), "--gpu-order"}})
          if (given)
            throw InputError("command line", "",
                             fmt::format("{} applies to nccl-tests and bandwidth logs (expected a runs CSV alone: its rows "
                                         "name each run's cluster, GPU, nodes and compute)",
                                         name));
        const auto runs = validate_training_runs(text, args->log);
        if (args->json) {
          fmt::print("{}\n", training_runs_json(args->log, runs).dump(2));
          return 0;
        }
        fmt::print("# measured training runs: {}\n", args->log);
        fmt::print("{}", format_training_runs(runs));
        fmt::print("{}", format_training_memory(runs));
        return 0;
      }
      if (args->topology.empty())
        throw InputError("command line", "", "--topology is required to validate an nccl-tests or bandwidth log");
      CollectiveOptions options;
      const NcclEnv overrides = nccl_env_of(args->algo, args->proto);
      nccl_filter_from_env(overrides, CollectiveOp::AllReduce, "command line");  // a bad value is the command line's
      // --calibration, else the topology file's own "calibration" (as nccl-tests and run apply it).
      std::string calibration = args->calibration;
      const Topology topology = load_calibrated_topology(args->topology, args->nodes, args->calibration, options, &calibration);
      const nlohmann::json header = {{"file", args->log}, {"topology", topology.name},
                                     {"gpus", topology.gpus().size()}, {"calibration", calibration}};
      const std::vector<int> gpu_order = parse_gpu_order(args->gpu_order);
      if (calibration::detect_input_format(text, args->log) == calibration::InputFormat::Bandwidth) {
        nlohmann::json out = header;
        out["kind"] = "bandwidth";
        out["matrices"] = nlohmann::json::array();
        // Printed once every matrix compared: a bad one leaves nothing printed.
        std::string report = fmt::format("# topology: {} ({} GPUs), calibration: {}\n", topology.name,
                                         topology.gpus().size(), calibration.empty() ? "none" : calibration);
        for (const auto& run : calibration::parse_bandwidth_log(text, args->log)) {
          const auto v = calibration::compare_bandwidth_log(topology, run, args->log, gpu_order);
          if (args->json)
            out["matrices"].push_back(bandwidth_json(v));
          else
            report += calibration::format_bandwidth_validation(v);
        }
        fmt::print("{}", args->json ? out.dump(2) + "\n" : report);
        return 0;
      }
      if (!gpu_order.empty())
        throw InputError("--gpu-order", "", "applies to a GPU-to-GPU bandwidth matrix, not to an nccl-tests log");
      // Each "# Collective test starting:" table of the file on its own (split_nccl_tests_tables).
      std::vector<NcclTestsLog> logs = calibration::split_nccl_tests_tables(text, args->log);
      if (logs.empty())
        logs.push_back(parse_nccl_tests_log(text, args->log));  // throws: no data rows
      nlohmann::json tables = nlohmann::json::array();
      // Printed once every table is validated: a bad one leaves nothing printed.
      std::string report = fmt::format("# topology: {} ({} GPUs), calibration: {}\n", topology.name,
                                       topology.gpus().size(), calibration.empty() ? "none" : calibration);
      for (std::size_t i = 0; i < logs.size(); ++i) {
        NcclTestsLog& log = logs[i];
        log.nccl_env.insert(log.nccl_env.end(), overrides.begin(), overrides.end());  // --algo/--proto win
        const auto result = validate_log(topology, log, options);
        std::vector<std::string> calibration_notes;
        if (!calibration.empty())
          calibration_notes = rows_bound_by_presets(topology, log, result, options, CalibrationFile::load(calibration));
        if (args->json) {
          nlohmann::json table = nccl_json(log, result);
          table["calibration_notes"] = calibration_notes;
          tables.push_back(std::move(table));
          continue;
        }
        report += fmt::format("{}{}", i > 0 ? "\n" : "", format_validation(log, result));
        for (const auto& line : calibration_notes)
          report += fmt::format("# calibration: {}\n", line);
      }
      if (!args->json)
        fmt::print("{}", report);
      if (args->json) {
        // One table: its fields at the top level; several: "tables", one object each.
        nlohmann::json out = header;
        out["kind"] = "nccl_tests";
        if (tables.size() == 1)
          out.update(tables[0]);
        else
          out["tables"] = std::move(tables);
        fmt::print("{}\n", out.dump(2));
      }
      return 0;
    };
  });
}

}  // namespace dtsim::cli
