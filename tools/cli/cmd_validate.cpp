// dtsim validate LOG --topology NAME|FILE [--nodes N] [--calibration FILE] [--algo A] [--proto P]
// dtsim validate RUNS.csv: measured training runs against predictions (sim/predict/training_runs.hpp)
// nccl-tests logs (under the NCCL_ALGO / NCCL_PROTO their header records, or --algo / --proto): row by row, measured and predicted time and busbw with the error, then the
// median |error| for sizes >= 1 MiB and below. Bandwidth logs (p2p matrices): each measured GPU
// pair beside the bandwidth of its route in the topology, and the median |error|.
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

#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>

namespace dtsim::cli {

namespace {
struct ValidateArgs {
  std::string log, topology, calibration, algo, proto;
  std::optional<int> nodes;  // unset: the topology's
};
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
  cmd->callback([&action, args] {
    action = [args] {
      if (args->log.size() > 4 && args->log.compare(args->log.size() - 4, 4, ".csv") == 0 && args->topology.empty()) {
        const auto runs = validate_training_runs(args->log);
        fmt::print("# measured training runs: {}\n", args->log);
        fmt::print("{}", format_training_runs(runs));
        return 0;
      }
      if (args->topology.empty())
        throw InputError("command line", "", "--topology is required to validate an nccl-tests or bandwidth log");
      CollectiveOptions options;
      const NcclEnv overrides = nccl_env_of(args->algo, args->proto);
      nccl_filter_from_env(overrides, CollectiveOp::AllReduce, "command line");  // a bad value is the command line's
      const Topology topology = load_calibrated_topology(
          args->topology, args->nodes, args->calibration, options);
      if (calibration::detect_input_format(read_input_file(args->log, "a measurement log"), args->log) == calibration::InputFormat::Bandwidth) {
        fmt::print("# topology: {} ({} GPUs), calibration: {}\n", topology.name, topology.gpus().size(),
                   args->calibration.empty() ? "none" : args->calibration);
        for (const auto& run : calibration::load_bandwidth_log(args->log))
          fmt::print("{}", calibration::validate_bandwidth_log(topology, run, args->log));
        return 0;
      }
      NcclTestsLog log = load_nccl_tests_log(args->log);
      log.nccl_env.insert(log.nccl_env.end(), overrides.begin(), overrides.end());  // --algo/--proto win
      const auto result = validate_log(topology, log, options);
      fmt::print("# topology: {} ({} GPUs), calibration: {}\n", topology.name, topology.gpus().size(),
                 args->calibration.empty() ? "none" : args->calibration);
      fmt::print("{}", format_validation(log, result));
      if (!args->calibration.empty())
        for (const auto& line :
             rows_bound_by_presets(topology, log, result, options, CalibrationFile::load(args->calibration)))
          fmt::print("# calibration: {}\n", line);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
