// dtsim run SCENARIO.json [--json] [--trace FILE [--trace-iterations 1|K|A-B|all]] [--html FILE [--gpus-shown 0-7]] [--set key.path=value ...]
#include "tools/cli/command.hpp"
#include "tools/cli/html_options.hpp"

#include "sim/predict/fit_alternatives.hpp"
#include "sim/predict/predict.hpp"
#include "sim/report/chrome_trace.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/json_report.hpp"
#include "sim/report/text_report.hpp"
#include "sim/util/atomic_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace dtsim::cli {

namespace {
struct RunArgs {
  std::string scenario;
  bool json = false;
  std::string trace;
  std::string trace_iterations = "1";  // the last simulated iteration: a steady-state one, a small file
  std::string html;
  TimelineArgs timeline;
  std::vector<std::string> sets;
};
// The scenario again with its reference_compute as the single-GPU throughput.
RunResult::Reference reference_run(const std::string& file, std::vector<Override> overrides, const Scenario& scenario)
{
  overrides.push_back({"training.compute.single_gpu_throughput", fmt::format("{}", scenario.reference_throughput),
                       "reference_compute"});
  const RunResult ref = predict(load_scenario(file, overrides)).result;
  return {scenario.reference_throughput, scenario.reference_source, ref.throughput_samples_per_s,
          ref.iteration_time_s, ref.scaling_efficiency, ref.total_time_days, ref.single_gpu_total_days};
}

}  // namespace

void add_run_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Predict one scenario: iteration time, scaling, epoch and total time");
  cmd->add_option("scenario", args->scenario, "Scenario file (JSON)")->required();
  cmd->add_flag("--json", args->json, "Print the figures as JSON");
  auto* trace = cmd->add_option("--trace", args->trace, "Write every simulated span as a Chrome trace (Perfetto)");
  cmd->add_option("--trace-iterations", args->trace_iterations,
                  "Iterations in the trace: 1 (default: the last simulated iteration, a steady-state one), K (the "
                  "last K), A-B (0-based) or all (every simulated iteration with the set-up, e.g. DDP's parameter "
                  "broadcast; a much larger file)")
      ->needs(trace);
  cmd->add_option("--set", args->sets,
                  "Override a scenario field: key.path=value (JSON value or bare string; null removes the key; "
                  "setting one training.compute source removes the others)")
      ->take_all();
  auto* html = cmd->add_option("--html", args->html, "Also write the HTML report of this run (timeline, breakdown, links; "
                                                     "`dtsim report` adds the scaling curve)");
  add_timeline_options(cmd, args->timeline, html);
  cmd->callback([&action, args] {
    action = [args] {
      std::vector<Override> overrides;
      for (const auto& s : args->sets)
        overrides.push_back(parse_override(s));
      std::vector<std::pair<std::string, std::string>> given;  // the outputs, checked before the run
      if (!args->trace.empty())
        given.emplace_back(args->trace, "--trace");
      if (!args->html.empty())
        given.emplace_back(args->html, "--html");
      check_output_paths(given, {args->scenario});
      const Scenario scenario = load_scenario(args->scenario, overrides);
      const TimelineOptions timeline = timeline_options(args->timeline, scenario.gpus);  // a bad flag before the work
      Prediction p = predict(scenario);
      // A GPU that does not fit: what would, each change planned (not simulated).
      if (std::any_of(p.result.memory.begin(), p.result.memory.end(), [](const GpuMemoryRow& row) { return !row.fits; }))
        p.result.fit_alternatives = fit_alternatives(scenario);
      if (scenario.reference_throughput > 0)
        p.result.reference = reference_run(args->scenario, overrides, scenario);
      const TraceOptions trace = trace_options(args->trace_iterations, p.plan);  // checked even without --trace
      std::vector<std::pair<std::string, std::string>> outputs;
      if (!args->trace.empty())
        outputs.emplace_back(args->trace, chrome_trace(p.topology, p.plan.graph, p.spans, trace));
      if (!args->html.empty()) {
        HtmlReportInput in;
        in.title = fmt::format("dtsim: {}", p.result.scenario);
        in.run = {&p.topology, &p.plan, &p.spans, &p.result};
        in.timeline = timeline;
        in.command = command_line();
        outputs.emplace_back(args->html, html_report(in));
      }
      write_files_atomically(outputs);
      if (args->json)
        fmt::print("{}\n", json_report(p.result).dump(2));
      else
        fmt::print("{}", text_report(p.result));
      return 0;
    };
  });
}

}  // namespace dtsim::cli
