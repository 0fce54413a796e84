// dtsim calibrate LOG... --topology NAME|FILE [--nodes N] [--max-size SIZE] [--algo A] [--proto P] -o CALIBRATION.json [--json]
// Every input's format is told by its content (calibration/calibration_inputs.hpp): nccl-tests /
// dtsim-bench-nccl logs, bandwidth logs, compute profiles. One calibration file is written
// atomically; the fit quality of each source is printed.
#include "tools/cli/command.hpp"

#include "calibration/calibrate.hpp"
#include "sim/collectives/nccl_env.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace dtsim::cli {

namespace {
struct CalibrateArgs {
  std::vector<std::string> logs;
  std::string topology, output, max_size, algo, proto;
  std::optional<int> nodes;  // unset: the topology's
  bool json = false;
};

int run(const CalibrateArgs& a)
{
  std::vector<std::string> inputs = a.logs;
  inputs.push_back(a.topology);  // a topology file (a preset's name is no file)
  check_output_paths({{a.output, "-o"}}, inputs);  // before the fit: nothing printed, then refused
  calibration::CalibrateRequest request{a.logs, a.topology, a.nodes, 0,
                                       nccl_env_of(a.algo, a.proto)};
  nccl_filter_from_env(request.nccl_overrides, CollectiveOp::AllReduce, "command line");  // a bad value is the command line's
  if (!a.max_size.empty()) {
    const auto v = parse_size(a.max_size);
    if (!v)
      throw InputError("command line", "", fmt::format("--max-size expects a size such as 8M, got '{}'", a.max_size));
    request.max_bytes = *v;
  }
  const auto outcome = calibration::calibrate(request);
  if (a.json) {
    outcome.file.write(a.output);
    fmt::print("{}\n", nlohmann::json{{"inputs", a.logs}, {"topology", a.topology}, {"output", a.output},
                                      {"report", outcome.report}, {"calibration", outcome.file.json}}
                           .dump(2));
    return 0;
  }
  outcome.file.write(a.output);  // first: a write that fails (a full device) leaves nothing printed
  fmt::print("# dtsim calibrate: {} file(s), topology {}\n", a.logs.size(), a.topology);
  for (const auto& line : outcome.report)
    fmt::print("# {}\n", line);
  fmt::print("# wrote {}\n", a.output);
  return 0;
}
}  // namespace

void add_calibrate_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Fit a calibration file to measurements (nccl-tests, bandwidth, compute)");
  cmd->add_option("logs", args->logs, "measurement files: nccl-tests / dtsim-bench-* outputs, bandwidth logs, profiles")
      ->required();
  cmd->add_option("--topology", args->topology, "preset name or topology .json file")->required();
  cmd->add_option("--nodes", args->nodes, "number of nodes");
  cmd->add_option("--max-size", args->max_size, "NCCL fit: only rows up to this size (e.g. 8M)");
  cmd->add_option("--algo", args->algo, "NCCL_ALGO of the measured runs, when their logs do not say it");
  cmd->add_option("--proto", args->proto, "NCCL_PROTO of the measured runs, when their logs do not say it");
  cmd->add_option("-o,--output", args->output, "calibration .json to write")->required();
  cmd->add_flag("--json", args->json, "Print the fit report and the calibration written as JSON");
  cmd->callback([&action, args] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
