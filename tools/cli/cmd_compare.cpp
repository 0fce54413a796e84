// dtsim compare A.json B.json ... [--strategies dp,ddp,pipeline] [--set key.path=value ...] [--json]
//               [--html FILE] [-j N]
// One table of several runs side by side: other scenarios, or one scenario (the same model on the
// same machine) under each strategy of --strategies.
#include "tools/cli/command.hpp"
#include "tools/cli/html_options.hpp"
#include "tools/cli/sweep_runner.hpp"

#include "sim/report/html_report.hpp"
#include "sim/report/json_report.hpp"
#include "sim/report/memory_report.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace dtsim::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> scenarios;
  std::string strategies;
  std::vector<std::string> sets;
  bool json = false;
  std::string html;
  int jobs = 1;
};

// Under --strategies, a strategy of other data-parallel degree trains another global batch where the
// scenario gives only the micro-batch (zero3 has no tensor parallelism: 8 x the replicas of fsdp x TP 8):
// its samples/s and days are then not those of the same training, and the table says so. (Scenarios
// compared side by side may differ in batch on purpose: more GPUs at the same batch per GPU, so only
// --strategies prints it.)
void print_batch_note(const std::vector<nlohmann::json>& rows)
{
  std::vector<double> batches;
  for (const auto& r : rows)
    if (const double b = r.value("global_batch", 0.0);
        b > 0 && std::find(batches.begin(), batches.end(), b) == batches.end())
      batches.push_back(b);
  if (batches.size() <= 1)
    return;
  std::vector<std::string> each;
  for (const auto& r : rows)
    each.push_back(fmt::format("{} {}", r.value("strategy", ""), r.value("global_batch", 0.0)));
  fmt::print("note: the rows train different global batches ({}): to compare one training, give training.global_batch "
             "and a training.micro_batch whose product with each row's replicas divides it\n",
             fmt::join(each, ", "));
}

int run_compare(const CompareArgs& a)
{
  if (!a.html.empty())
    check_output_paths({{a.html, "--html"}}, a.scenarios);  // before any run: nothing printed, then refused
  std::vector<Override> base;
  for (const auto& s : a.sets)
    base.push_back(parse_override(s));
  const auto strategies = a.strategies.empty() ? std::vector<std::string>{} : strategy_list(a.strategies, "--strategies");
  std::vector<PointJob> jobs;
  for (const auto& file : a.scenarios) {
    if (a.strategies.empty()) {
      jobs.push_back({file, base});
      continue;
    }
    // The scenario's own strategy runs as given (its row is run's); names of its kind keep its settings
    // (compared_strategy); the other kinds run their presets.
    const nlohmann::json own = scenario_strategy(file, base);
    for (const auto& kind : strategies)
      jobs.push_back({file, strategy_overrides(base, kind, strategies, own)});
  }
  const auto outcomes = run_points(jobs, a.jobs);
  std::vector<nlohmann::json> rows;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].exit_code == 2)  // the message names the scenario file and pointer; say which run
      throw InputError(a.strategies.empty() ? "compare" : "--strategies " + strategies[i % strategies.size()], "",
                       outcomes[i].error);
    if (outcomes[i].exit_code != 0)
      throw std::runtime_error(outcomes[i].error);
    rows.push_back(outcomes[i].result);
    if (!a.strategies.empty())  // the name as given: zero2 and zero3 are both kind "zero"
      rows.back()["strategy"] = strategies[i % strategies.size()];
  }
  if (!a.html.empty()) {  // first: a write that fails (a full device) leaves nothing printed
    HtmlReportInput in;
    in.title = "dtsim compare";
    in.compared = rows;
    in.command = command_line();
    write_file_atomically(a.html, html_report(in));
  }
  if (a.json) {
    fmt::print("{}\n", nlohmann::json{{"runs", rows}}.dump(2));
  } else {
    // host_s: an offloaded optimizer's step on the host's cores, the GPU idle (neither exposed nor waiting).
    // bubble_s, where a row is pipelined: the fill and drain every stage waits for (run's "pipeline
    // bubble"), neither communication nor compute; empty on the rows without a pipeline.
    const bool bubble_column = any_pipeline_bubble(rows);
    fmt::print("{:<28} {:<13} {:>5} {:>13} {:>13} {:>13} {}{:>13} {:>11} {:>11} {:>8} {:>10} {:>12} {:>14}\n", "scenario",
               "strategy", "gpus", "iteration_s", "compute_s", "exposed_s", bubble_column ? fmt::format("{:>13} ", "bubble_s") : "",
               "waiting_s", "host_s", "samples/s", "speedup", "efficiency", "total_days", "memory_GiB");
    for (const auto& r : rows) {
      // The busiest GPU's device memory, what the fits verdict weighs, as sweep's memory_GiB and the
      // HTML table's memory/GPU (memory_report.hpp: device_memory_of).
      const DeviceMemoryFigures mem = device_memory_of(r);
      const double peak = mem.busiest_bytes;
      const bool fits = mem.fits;
      const auto bubble = pipeline_bubble_of(r);
      const std::string bubble_cell =
          !bubble_column ? "" : bubble ? fmt::format("{:>13.6f} ", *bubble) : fmt::format("{:>13} ", "");
      fmt::print("{:<28} {:<13} {:>5} {:>13.6f} {:>13.6f} {:>13.6f} {}{:>13.6f} {:>11.6f} {:>11.1f} {:>8.2f} {:>9.1f}% {:>12.3f} {:>14}\n",
                 r.value("scenario", ""), r.value("strategy", ""), r.value("gpus", 0), r.value("iteration_time_s", 0.0),
                 r.value("compute_time_s", 0.0), r.value("exposed_comm_time_s", 0.0), bubble_cell, r.value("straggler_wait_s", 0.0),
                 r.value("host_step_s", 0.0), r.value("throughput_samples_per_s", 0.0), r.value("speedup_vs_1gpu", 0.0),
                 r.value("scaling_efficiency", 0.0) * 100, r.value("total_time_days", 0.0),
                 fmt::format("{:.1f}{}", peak / (1024.0 * 1024 * 1024), fits ? "" : " NO FIT"));
    }
    if (!a.strategies.empty())
      print_batch_note(rows);
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action)
{
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Several scenarios, or one under several strategies, side by side");
  cmd->add_option("scenarios", a->scenarios, "Scenario files (JSON)")->required();
  cmd->add_option("--strategies", a->strategies, "run each scenario under these strategies (e.g. dp,ddp,pipeline)");
  cmd->add_option("--set", a->sets, "Override a scenario field of every run (as in dtsim run)")->take_all();
  cmd->add_flag("--json", a->json, "Print the runs' figures as JSON");
  cmd->add_option("--html", a->html, "Also write the comparison as an HTML page");
  cmd->add_option("-j,--jobs", a->jobs, "processes running at once (default 1)")->check(CLI::Range(1, 256));
  cmd->callback([&action, a] { action = [a] { return run_compare(*a); }; });
}

}  // namespace dtsim::cli
