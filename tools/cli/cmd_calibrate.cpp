// dtsim calibrate LOG... --topology NAME|FILE [--nodes N] [--max-size SIZE] -o CALIBRATION.json
// Detects each input's format: nccl-tests logs go to the NCCL fitter (efficiency of the bottleneck
// link class, hop-latency scale, launch overhead). Fragments are merged and written atomically;
// the fit quality is printed.
#include "tools/cli/command.hpp"

#include "calibration/calibration_file.hpp"
#include "calibration/nccl_fit.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

namespace dtsim::cli {

namespace {
struct CalibrateArgs {
  std::vector<std::string> logs;
  std::string topology, output, max_size;
  int nodes = 0;
};

std::string read_text(const std::string& path)
{
  std::ifstream in(path);
  if (!in)
    throw InputError(path, "", "cannot open the file (expected a measurement log)");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string pct(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.1f}%", 100 * v); }

int run(const CalibrateArgs& a)
{
  std::vector<NcclTestsLog> nccl_logs;
  for (const auto& path : a.logs) {
    const std::string text = read_text(path);
    if (!looks_like_nccl_tests_log(text))
      throw InputError(path, "", "not an nccl-tests output (expected rows of size, count, type, redop, time, algbw, busbw)");
    nccl_logs.push_back(parse_nccl_tests_log(text, path));
  }
  std::uint64_t max_bytes = 0;
  if (!a.max_size.empty()) {
    const auto v = parse_size(a.max_size);
    if (!v)
      throw InputError("command line", "", fmt::format("--max-size expects a size such as 8M, got '{}'", a.max_size));
    max_bytes = *v;
  }
  CollectiveOptions options;
  const Topology topology =
      load_calibrated_topology(a.topology, a.nodes ? std::optional<int>(a.nodes) : std::nullopt, "", options);
  CalibrationFile cal;
  cal.json["topology"] = a.topology;
  cal.json["nodes"] = topology.nodes;
  const auto fit = fit_nccl_params(topology, nccl_logs, NcclParams::defaults(topology.gpu.compute_capability), max_bytes);
  cal.merge(fit.fragment);
  fmt::print("# dtsim calibrate: {} log(s) on {} ({} GPUs){}\n", nccl_logs.size(), topology.name,
             topology.gpus().size(), max_bytes ? fmt::format(", rows <= {} B", max_bytes) : "");
  fmt::print("# fitted: launch_overhead_us {:.2f}, hop_latency_scale {:.3f}; efficiency: {}\n",
             fit.params.launch_overhead_us, fit.params.hop_latency_scale, fit.efficiency_fitted);
  fmt::print("# nccl: {}\n", fit.fragment["nccl"].dump());
  for (std::size_t i = 0; i < nccl_logs.size(); ++i)
    fmt::print("# {}: median |busbw error| >= 1 MiB {} -> {}, < 1 MiB {} -> {}\n", nccl_logs[i].path,
               pct(fit.before[i].median_abs_error_large), pct(fit.after[i].median_abs_error_large),
               pct(fit.before[i].median_abs_error_small), pct(fit.after[i].median_abs_error_small));
  cal.write(a.output);
  fmt::print("# wrote {}\n", a.output);
  return 0;
}
}  // namespace

void add_calibrate_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Fit a calibration file to measured nccl-tests logs");
  cmd->add_option("logs", args->logs, "nccl-tests outputs")->required();
  cmd->add_option("--topology", args->topology, "preset name or topology .json file")->required();
  cmd->add_option("--nodes", args->nodes, "number of nodes");
  cmd->add_option("--max-size", args->max_size, "fit only rows up to this size (e.g. 8M)");
  cmd->add_option("-o,--output", args->output, "calibration .json to write")->required();
  cmd->callback([&action, args] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
