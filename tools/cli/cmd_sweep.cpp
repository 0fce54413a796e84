// dtsim sweep SCENARIO.json --gpus 1,2,4,8,16,32 [--csv FILE] [--set key.path=value ...]
// The same scenario at several GPU counts: how many GPUs until communication eats the gain.
#include "tools/cli/command.hpp"

#include "sim/predict/predict.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <memory>

namespace dtsim::cli {

namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<int> gpus;
  std::string csv;
  std::vector<std::string> sets;
};

int run_sweep(const SweepArgs& args)
{
  std::vector<Override> base;
  for (const auto& s : args.sets)
    base.push_back(parse_override(s));
  std::vector<RunResult> rows;
  for (int n : args.gpus) {
    if (n <= 0)
      throw InputError("--gpus", "", fmt::format("expected positive GPU counts, got {}", n));
    auto overrides = base;
    overrides.push_back({"gpus", std::to_string(n)});
    rows.push_back(predict(load_scenario(args.scenario, overrides)).result);
  }

  fmt::print("dtsim sweep: {} ({} on {})\n", rows.front().scenario, rows.front().strategy, rows.front().topology);
  fmt::print("{:>6} {:>6} {:>14} {:>14} {:>14} {:>10} {:>10} {:>12}\n", "gpus", "nodes", "iteration_s", "exposed_comm_s",
             "samples/s", "speedup", "efficiency", "total_days");
  std::string csv = "gpus,nodes,iteration_time_s,compute_time_s,comm_time_s,exposed_comm_time_s,"
                    "throughput_samples_per_s,speedup_vs_1gpu,scaling_efficiency,epoch_time_s,total_time_days,"
                    "ideal_linear_total_days\n";
  for (const auto& r : rows) {
    fmt::print("{:>6} {:>6} {:>14.6f} {:>14.6f} {:>14.1f} {:>10.2f} {:>9.1f}% {:>12.3f}\n", r.gpus, r.nodes_used,
               r.iteration_time_s, r.exposed_comm_time_s, r.throughput_samples_per_s, r.speedup_vs_1gpu,
               r.scaling_efficiency * 100, r.total_time_days);
    csv += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}\n", r.gpus,
                       r.nodes_used, r.iteration_time_s, r.compute_time_s, r.comm_time_s, r.exposed_comm_time_s,
                       r.throughput_samples_per_s, r.speedup_vs_1gpu, r.scaling_efficiency, r.epoch_time_s,
                       r.total_time_days, r.ideal_linear_total_days);
  }
  if (!args.csv.empty())
    write_file_atomically(args.csv, csv);
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "Predict one scenario at several GPU counts (scaling curve)");
  cmd->add_option("scenario", args->scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--gpus", args->gpus, "GPU counts, comma-separated")->delimiter(',')->required();
  cmd->add_option("--csv", args->csv, "Also write the table as CSV");
  cmd->add_option("--set", args->sets, "Override a scenario field (as in dtsim run)")->take_all();
  cmd->callback([&action, args] { action = [args] { return run_sweep(*args); }; });
}

}  // namespace dtsim::cli
