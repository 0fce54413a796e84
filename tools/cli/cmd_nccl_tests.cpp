// dtsim nccl-tests --topology NAME|FILE [--nodes N] [--op all_reduce|...] [-b MIN] [-e MAX] [-f FACTOR]
//                  [--calibration FILE] [--algo ring|tree|nvls|nvlstree] [--proto ll|ll128|simple]
// Prints the predicted table in nccl-tests' own format. The #wrong column reads N/A: nothing is
// checked in a simulation (nccl-tests prints N/A the same way under -c 0).
#include "tools/cli/command.hpp"

#include "calibration/calibration_file.hpp"
#include "calibration/nccl_tests_log.hpp"
#include "sim/collectives/nccl_env.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <memory>

namespace dtsim::cli {

namespace {

struct NcclTestsArgs {
  std::string topology;
  std::optional<int> nodes;  // unset: the topology's
  std::string op = "all_reduce";
  std::string min_bytes = "32M", max_bytes = "32M";
  double factor = 2;
  std::string calibration;
  std::string algo, proto;
  int root = 0;
  int gpus_per_thread = 0;  ///< -g; 0: the usual run (usual_gpus_per_thread)
  bool json = false;
};

std::uint64_t size_arg(const std::string& text, const char* flag)
{
  const auto v = parse_size(text);
  if (!v)
    throw InputError("command line", "", fmt::format("{} expects a size such as 8, 64K, 32M or 8G, got '{}'", flag, text));
  return *v;
}

std::string human(std::uint64_t b)
{
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", v, units[u]);
}

int run(const NcclTestsArgs& a)
{
  const auto op = parse_collective_op(a.op);
  if (!op)
    throw InputError("command line", "",
                     fmt::format("--op expects all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, "
                                 "scatter, alltoall or sendrecv, got '{}'",
                                 a.op));
  CollectiveOptions options;
  options.filter = nccl_filter_from_env(nccl_env_of(a.algo, a.proto), *op, "command line");
  if (!(a.factor > 1))
    throw InputError("command line", "", fmt::format("-f expects a factor > 1, got {}", a.factor));
  const std::uint64_t lo = size_arg(a.min_bytes, "-b"), hi = size_arg(a.max_bytes, "-e");
  if (lo > hi)
    throw InputError("command line", "", "-b must not exceed -e");
  // Each size is one simulation: nccl-tests' own sweeps have a few dozen rows.
  constexpr double kMaxSizes = 1000;
  if (std::log(static_cast<double>(hi) / static_cast<double>(std::max<std::uint64_t>(lo, 1))) / std::log(a.factor) + 1 >
      kMaxSizes)
    throw InputError("command line", "", fmt::format("-b {} -e {} -f {} gives more than {} sizes (expected a larger -f)",
                                                     a.min_bytes, a.max_bytes, a.factor, kMaxSizes));
  const Topology topology = load_calibrated_topology(a.topology, a.nodes,
                                                     a.calibration, options);
  const int n = static_cast<int>(topology.gpus().size());
  if (a.gpus_per_thread < 0 || a.gpus_per_thread > n || (a.gpus_per_thread > 0 && n % a.gpus_per_thread != 0))
    throw InputError("command line", "", fmt::format("-g expects a divisor of the {} GPUs, got {}", n, a.gpus_per_thread));
  options.gpus_per_thread = a.gpus_per_thread > 0 ? a.gpus_per_thread : usual_gpus_per_thread(topology);
  if (a.root < 0 || a.root >= n)
    throw InputError("command line", "", fmt::format("--root expects a rank in [0, {}]", n - 1));
  const auto points = simulate_nccl_tests_sweep(topology, *op, nccl_tests_sweep_sizes(lo, hi, a.factor), options, a.root);

  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& p : points) {
      const double algbw = p.time_us > 0 ? p.size.algbw_bytes / 1e9 / (p.time_us * 1e-6) : 0.0;
      rows.push_back({{"bytes", p.size.bytes}, {"count", p.size.count}, {"time_us", p.time_us}, {"algbw_GBps", algbw},
                      {"busbw_GBps", algbw * nccl_tests_busbw_factor(a.op, n)}, {"algorithm", p.algorithm},
                      {"nccl_model_time_us", p.model_us}});
    }
    fmt::print("{}\n", nlohmann::json{{"simulated", true}, {"topology", topology.name}, {"nodes", topology.nodes},
                                      {"gpu", topology.gpu.name}, {"op", a.op}, {"ranks", n},
                                      {"gpus_per_thread", options.gpus_per_thread},
                                      {"calibration", a.calibration}, {"nccl_algo", a.algo}, {"nccl_proto", a.proto},
                                      {"rows", rows}}.dump(2));
    return 0;
  }
  NcclTestsTable table;
  table.op = a.op;
  table.ranks = n;
  table.gpus_per_thread = options.gpus_per_thread;
  table.min_bytes = lo;
  table.max_bytes = hi;
  table.factor = a.factor;
  table.comments.push_back("dtsim nccl-tests: SIMULATED prediction, not a measurement");
  table.comments.push_back(fmt::format("topology: {} ({} node(s) x {} GPU(s), {})", topology.name, topology.nodes,
                                       topology.gpus_per_node, topology.gpu.name));
  table.comments.push_back(fmt::format("calibration: {}", a.calibration.empty() ? "none (preset defaults)" : a.calibration));
  table.comments.push_back(fmt::format("NCCL_ALGO={} NCCL_PROTO={}", a.algo.empty() ? "(NCCL's choice)" : a.algo,
                                       a.proto.empty() ? "(NCCL's choice)" : a.proto));
  table.comments.push_back("#wrong: N/A (a simulation checks no data)");
  // Algorithm/protocol per size range.
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    while (j + 1 < points.size() && points[j + 1].algorithm == points[i].algorithm)
      ++j;
    table.comments.push_back(fmt::format("algorithm {:>14}: {} - {}", points[i].algorithm, human(points[i].size.bytes),
                                         human(points[j].size.bytes)));
    i = j + 1;
  }
  for (int r = 0; r < n; ++r) {
    const auto& d = topology.device(topology.gpus()[static_cast<std::size_t>(r)]);
    table.rank_lines.push_back(fmt::format("#  Rank {:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [{:04x}:{:02x}:{:02x}] {}",
                                           r, 0, r / options.gpus_per_thread, fmt::format("node{}", std::max(d.node, 0)), d.local_index, 0, 0, 0,
                                           topology.gpu.name));
  }
  for (const auto& p : points)
    table.rows.push_back({p.size, p.time_us});
  fmt::print("{}", format_nccl_tests_table(table));
  return 0;
}

}  // namespace

void add_nccl_tests_command(CLI::App& app, Action& action)
{
  auto args = std::make_shared<NcclTestsArgs>();
  auto* cmd = app.add_subcommand("nccl-tests", "Predict an nccl-tests sweep, printed in nccl-tests' own format");
  cmd->add_option("--topology", args->topology, "preset name or topology .json file")->required();
  cmd->add_option("--nodes", args->nodes, "number of nodes (overrides the topology's)");
  cmd->add_option("--op", args->op, "all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, scatter, alltoall, sendrecv");
  cmd->add_option("-b,--minbytes", args->min_bytes, "smallest size (K/M/G suffixes)");
  cmd->add_option("-e,--maxbytes", args->max_bytes, "largest size (K/M/G suffixes)");
  cmd->add_option("-f,--stepfactor", args->factor, "multiplicative step");
  cmd->add_option("--calibration", args->calibration, "calibration .json (dtsim calibrate)");
  cmd->add_option("--algo", args->algo, "NCCL_ALGO: ring, tree, nvls, nvlstree, pat; a list, ^ to exclude");
  cmd->add_option("--proto", args->proto, "NCCL_PROTO: ll, ll128, simple; a list, ^ to exclude");
  cmd->add_option("-r,--root", args->root, "root rank of rooted collectives");
  cmd->add_option("-g,--ngpus", args->gpus_per_thread,
                  "GPUs per thread, as nccl-tests -g: each costs one kernel launch (default: all GPUs of one node, "
                  "1 across nodes as under mpirun)");
  cmd->add_flag("--json", args->json, "Print the predicted rows as JSON instead of nccl-tests' table");
  cmd->callback([&action, args] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
