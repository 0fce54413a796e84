// dtsim report SCENARIO.json -o report.html [--set key.path=value ...] [--gpus-shown 0-7]
//              [--scaling-gpus 1,2,4,...|none] [--compare-strategies dp,ddp,pipeline] [-j N]
// One self-contained HTML page: the scenario's timeline, breakdown, link utilisation and
// training-time arithmetic, plus the scaling curve (the scenario at 1, 2, 4, ... GPUs up to its own
// count, each with enough nodes) and, when asked, the strategies side by side.
#include "tools/cli/command.hpp"
#include "tools/cli/html_options.hpp"
#include "tools/cli/sweep_runner.hpp"

#include "sim/predict/predict.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/json_report.hpp"
#include "sim/util/atomic_file.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

namespace dtsim::cli {

namespace {

struct ReportArgs {
  std::string scenario;
  std::string output;
  std::vector<std::string> sets;
  std::string scaling_gpus;  ///< "" = powers of two up to the scenario's count; "none"
  std::string compare;       ///< strategies, comma-separated
  int jobs = 1;
  TimelineArgs timeline;
};

/// Most points of a scaling curve: each is a simulation, and a chart of more is unreadable.
constexpr std::size_t kMaxScalingPoints = 64;

std::vector<int> scaling_counts(const ReportArgs& a, int gpus)
{
  if (a.scaling_gpus == "none")
    return {};
  if (a.scaling_gpus.empty())
    return gpus > 1 ? powers_of_two_up_to(gpus) : std::vector<int>{};
  std::vector<int> out;
  const auto counts = split_trimmed(a.scaling_gpus, ',');
  if (counts.size() > kMaxScalingPoints)
    throw InputError("--scaling-gpus", "", fmt::format("expected at most {} GPU counts, got {}", kMaxScalingPoints, counts.size()));
  for (const auto& t : counts) {
    if (const auto n = parse_int(t, 1, 1 << 20)) {
      out.push_back(static_cast<int>(*n));
      continue;
    }
    throw InputError("--scaling-gpus", "", fmt::format("expected positive GPU counts such as 1,2,4,8 or none, got '{}'", t));
  }
  return out;
}

int run_report(const ReportArgs& a)
{
  check_output_paths({{a.output, "-o"}}, {a.scenario});
  std::vector<Override> overrides;
  for (const auto& s : a.sets)
    overrides.push_back(parse_override(s));
  const auto strategies = a.compare.empty() ? std::vector<std::string>{} : strategy_list(a.compare, "--compare-strategies");
  const Scenario scenario = load_scenario(a.scenario, overrides);
  const auto counts = scaling_counts(a, scenario.gpus);
  const TimelineOptions timeline = timeline_options(a.timeline, scenario.gpus);  // bad flags before the work
  const Prediction p = predict(scenario);

  HtmlReportInput in;
  in.title = fmt::format("dtsim: {}", p.result.scenario);
  in.run = {&p.topology, &p.plan, &p.spans, &p.result};
  in.timeline = timeline;
  in.command = command_line();

  std::vector<std::vector<Override>> points;
  for (const int n : counts)
    points.push_back(with_gpus(a.scenario, overrides, n));
  const nlohmann::json own = scenario_strategy(a.scenario, overrides);  // its settings carry, as compare's
  for (const auto& kind : strategies)
    points.push_back(strategy_overrides(overrides, kind, strategies, own));
  const auto outcomes = run_points(a.scenario, points, a.jobs);
  // GPU counts the user named are refused as sweep --gpus refuses them (nothing written); a point
  // of the default curve (powers of two) that does not run is left out with a warning.
  if (!a.scaling_gpus.empty())
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (outcomes[i].exit_code == 2)
        throw InputError("--scaling-gpus", "", fmt::format("the point at {} GPU{}: {}", counts[i], counts[i] == 1 ? "" : "s",
                                                           outcomes[i].error));
  // The strategies are named by the user too: one that cannot run is refused, as compare refuses it.
  for (std::size_t i = counts.size(); i < outcomes.size(); ++i) {
    if (outcomes[i].exit_code == 2)
      throw InputError("--compare-strategies " + strategies[i - counts.size()], "", outcomes[i].error);
    if (outcomes[i].exit_code != 0)
      throw std::runtime_error(outcomes[i].error);
  }
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const bool scaling = i < counts.size();
    if (outcomes[i].exit_code != 0) {
      const std::string left_out = fmt::format("dtsim report: the scaling curve's point at {} GPU{} left out: {}\n",
                                               counts[i], counts[i] == 1 ? "" : "s", outcomes[i].error);
      std::fputs(left_out.c_str(), stderr);  // no throw where stderr cannot be written (main.cpp's say)
      continue;
    }
    (scaling ? in.scaling : in.compared).push_back(outcomes[i].result);
    if (!scaling)  // the name as given, as compare's: zero2 and zero3 are both kind "zero", hsdp kind "fsdp"
      in.compared.back()["strategy"] = strategies[i - counts.size()];
  }
  write_file_atomically(a.output, html_report(in));
  fmt::print("dtsim report: wrote {} ({} scaling point(s){})\n", a.output, in.scaling.size(),
             in.compared.empty() ? "" : fmt::format(", {} strategies", in.compared.size()));
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action)
{
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Write one self-contained HTML page: timeline, breakdown, link "
                                           "utilisation, scaling curve, training-time arithmetic");
  cmd->add_option("scenario", a->scenario, "Scenario file (JSON)")->required();
  cmd->add_option("-o,--output", a->output, "HTML file to write")->required();
  cmd->add_option("--set", a->sets, "Override a scenario field (as in dtsim run)")->take_all();
  cmd->add_option("--scaling-gpus", a->scaling_gpus,
                  "GPU counts of the scaling curve (default 1, 2, 4, ... up to the scenario's; none: no curve)");
  cmd->add_option("--compare-strategies", a->compare, "also run these strategies (e.g. dp,ddp,pipeline) side by side");
  cmd->add_option("-j,--jobs", a->jobs, "processes running the extra points at once (default 1)")->check(CLI::Range(1, 256));
  add_timeline_options(cmd, a->timeline);
  cmd->callback([&action, a] { action = [a] { return run_report(*a); }; });
}

}  // namespace dtsim::cli
