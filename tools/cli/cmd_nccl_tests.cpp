// dtsim nccl-tests --topology NAME|FILE [--nodes N] [--op all_reduce|...] [-b MIN] [-e MAX] [-f FACTOR | -i STEP]
//                  [--calibration FILE] [--algo ring|tree|nvls|nvlstree] [--proto ll|ll128|simple]
//                  [nccl-tests' own flags: -t -g -n -w -c -d TYPE -o REDOP -a -z -r -m -G]
// Prints the predicted table in nccl-tests' own format. The #wrong column reads N/A: nothing is
// checked in a simulation (nccl-tests prints N/A the same way under -c 0).
// nccl-tests' flags (reference/nccl-and-pytorch-model.md 3.1) are accepted with their long forms;
// `-o/--op` takes a reduction (sum, prod, ...) as in nccl-tests or a collective as in dtsim. Values
// that change nothing a simulation measures are recorded in the header (-n, -w, -c, -a: every
// iteration and every rank of a simulation take the same time); values dtsim does not model exit 2.
#include "tools/cli/command.hpp"

#include "calibration/calibration_file.hpp"
#include "calibration/nccl_tests_log.hpp"
#include "sim/collectives/nccl_env.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/util/did_you_mean.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include <memory>
#include <optional>

namespace dtsim::cli {

namespace {

struct NcclTestsArgs {
  std::string topology;
  std::optional<int> nodes;  // unset: the topology's
  std::vector<std::string> ops;  ///< -o/--op, each a collective or a reduction
  std::string min_bytes = "32M", max_bytes = "32M";
  std::optional<double> factor;     ///< -f (default 2 unless -i is given)
  std::optional<std::string> step;  ///< -i
  std::optional<int> threads;       ///< -t
  int iters = 1, warmup_iters = 0, check_iters = 0, average = 1, blocking = 0, agg_iters = 1, cudagraph = 0;
  std::string datatype = "float";
  std::string calibration;
  std::string algo, proto;
  int root = 0;
  std::optional<int> gpus_per_thread;  ///< -g; not given: the usual run (usual_gpus_per_thread)
  bool json = false;
};

constexpr std::uint64_t kMaxCollectiveBytes = std::uint64_t{1} << 40;

std::uint64_t size_arg(const std::string& text, const char* flag)
{
  // At most 1 TiB: nccl-tests' buffers live in one GPU's memory (192 GB on a B200, NVIDIA datasheet);
  // larger sizes only overflow the cost model's integers.
  const auto v = parse_size(text);
  if (!v || *v > kMaxCollectiveBytes)
    throw InputError("command line", "", fmt::format("{} expects a size such as 8, 64K, 32M or 8G of at most 1T, got '{}'",
                                                     flag, text));
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

const std::vector<std::string> kCollectives = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                               "gather",     "scatter",    "alltoall",       "sendrecv"};

/// What -o/--op named: the collective (dtsim's --op) and the reduction (nccl-tests' -o).
std::pair<std::string, std::string> collective_and_redop(const std::vector<std::string>& ops)
{
  std::string collective, redop;
  const auto& redops = nccl_tests_redops();
  for (const auto& v : ops) {
    const bool is_collective = std::find(kCollectives.begin(), kCollectives.end(), v) != kCollectives.end();
    const bool is_redop = std::find(redops.begin(), redops.end(), v) != redops.end();
    if (v == "all")
      throw InputError("--op", "", "all: dtsim simulates one reduction per run (run it once per operation)");
    std::vector<std::string> known = kCollectives;
    known.insert(known.end(), redops.begin(), redops.end());
    if (!is_collective && !is_redop)
      throw InputError("--op", "", fmt::format("expected a collective ({}) or an nccl-tests reduction ({}), got \"{}\"{}",
                                               fmt::join(kCollectives, ", "), fmt::join(redops, ", "), v,
                                               did_you_mean(v, known)));
    std::string& slot = is_collective ? collective : redop;
    if (!slot.empty() && slot != v)
      throw InputError("--op", "", fmt::format("{} given twice ({} and {})", is_collective ? "a collective" : "a reduction",
                                               slot, v));
    slot = v;
  }
  return {collective.empty() ? "all_reduce" : collective, redop.empty() ? "sum" : redop};
}

/// nccl-tests' flags dtsim accepts but does not model, refused with the reason.
void check_modelled(const NcclTestsArgs& a)
{
  if (a.blocking != 0)
    throw InputError("-z", "", fmt::format("{}: dtsim models nccl-tests' default non-blocking launches (-z 0); a blocking "
                                           "run adds a host synchronisation per operation that dtsim does not model",
                                           a.blocking));
  if (a.agg_iters != 1)
    throw InputError("-m", "", fmt::format("{}: dtsim simulates one operation per launch (-m 1); aggregating operations "
                                           "in one ncclGroup is not modelled",
                                           a.agg_iters));
  if (a.cudagraph != 0)
    throw InputError("-G", "", fmt::format("{}: CUDA graph launches are not modelled (expected -G 0)", a.cudagraph));
  if (a.datatype == "all")
    throw InputError("-d", "", "all: dtsim simulates one data type per run (run it once per type)");
  if (nccl_tests_type_bytes(a.datatype) == 0)
    throw InputError("-d", "", fmt::format("expected one of nccl-tests' types ({}), got \"{}\"{}",
                                           fmt::join(nccl_tests_types(), ", "), a.datatype,
                                           did_you_mean(a.datatype, nccl_tests_types())));
}

int run(const NcclTestsArgs& a)
{
  check_modelled(a);
  const auto [op_name, redop] = collective_and_redop(a.ops);
  const auto op = parse_collective_op(op_name);
  if (!op)
    throw InputError("--op", "", fmt::format("cannot simulate {}", op_name));
  CollectiveOptions options;
  options.filter = nccl_filter_from_env(nccl_env_of(a.algo, a.proto), *op, "command line");
  const std::uint64_t lo = size_arg(a.min_bytes, "-b"), hi = size_arg(a.max_bytes, "-e");
  if (lo > hi)
    throw InputError("command line", "", "-b must not exceed -e");
  // nccl-tests: the factor when one > 1 is given, else the additive step. dtsim's default: factor 2.
  const bool by_step = a.step && !a.factor;
  const double factor = a.factor.value_or(2);
  const std::uint64_t step = a.step ? size_arg(*a.step, "-i") : 0;
  if (!by_step && !(factor > 1 && std::isfinite(factor)))
    throw InputError("command line", "", fmt::format("-f expects a factor > 1, got {}", factor));
  if (by_step && step == 0)
    throw InputError("command line", "", "-i expects a step of at least 1 byte, got 0");
  // Each size is one simulation: nccl-tests' own sweeps have a few dozen rows.
  constexpr double kMaxSizes = 1000;
  const double sizes_asked =
      by_step ? static_cast<double>(hi - lo) / static_cast<double>(step) + 1
              : std::log(static_cast<double>(hi) / static_cast<double>(std::max<std::uint64_t>(lo, 1))) / std::log(factor) + 1;
  if (sizes_asked > kMaxSizes)
    throw InputError("command line", "", fmt::format("-b {} -e {} {} gives more than {} sizes (expected a larger {})",
                                                     a.min_bytes, a.max_bytes,
                                                     by_step ? fmt::format("-i {}", *a.step) : fmt::format("-f {}", factor),
                                                     kMaxSizes, by_step ? "-i" : "-f"));
  // --calibration, else the topology file's own "calibration" (checked and applied as run applies a cluster's).
  std::string calibration = a.calibration;
  const Topology topology = load_calibrated_topology(a.topology, a.nodes, a.calibration, options, &calibration);
  const int n = static_cast<int>(topology.gpus().size());
  if (a.gpus_per_thread && (*a.gpus_per_thread < 1 || *a.gpus_per_thread > n || n % *a.gpus_per_thread != 0))
    throw InputError("command line", "", fmt::format("-g expects a divisor of the {} GPUs, got {}", n, *a.gpus_per_thread));
  const int threads = a.threads.value_or(1);
  if (a.threads && (threads < 1 || threads > n || n % threads != 0))
    throw InputError("-t", "", fmt::format("expected a divisor of the {} GPUs, got {}", n, threads));
  // Without -g: the usual run (one thread drives a node's GPUs, one per process across nodes), split over -t threads.
  options.gpus_per_thread = a.gpus_per_thread ? *a.gpus_per_thread : std::max(1, usual_gpus_per_thread(topology) / threads);
  if (n % (threads * options.gpus_per_thread) != 0)
    throw InputError("-t", "", fmt::format("-t {} x -g {} GPUs per process does not divide the {} GPUs", threads,
                                           options.gpus_per_thread, n));
  if (a.root < 0 || a.root >= n)
    throw InputError("command line", "", fmt::format("--root expects a rank in [0, {}]", n - 1));
  // An AllToAll is n(n - 1) concurrent point-to-point flows (direct_collectives.cpp), each a SimGrid
  // activity on its route: measured here, 128 / 256 GPUs (dgx1-v100) took 0.86 / 3.5 GB and 2.1 / 9 s, so
  // memory grows as n^2 (about 54 KB a flow). 2^18 flows (512 GPUs, ~14 GB) is what this bound allows.
  constexpr double kMaxAllToAllFlows = 262144;
  if (*op == CollectiveOp::AllToAll && static_cast<double>(n) * (n - 1) > kMaxAllToAllFlows)
    throw InputError(a.nodes ? "--nodes" : "--topology", "",
                     fmt::format("alltoall over {} GPUs is {:.0f} point-to-point flows per call; dtsim simulates at most "
                                 "{:.0f} (512 GPUs), each about 54 KB of simulator memory (expected fewer GPUs)",
                                 n, static_cast<double>(n) * (n - 1), kMaxAllToAllFlows));
  // Every other collective's plan and simulation grow with the GPUs, linearly (one size at a time:
  // simulate_nccl_tests_sweep). Measured on this project's 2-core machine with dgx1-v100, the
  // costliest preset per GPU (hgx-h100 takes 0.37 of its memory), one 1 MB call: all_reduce at 8192 /
  // 16384 / 32768 GPUs 1.28 / 2.54 / 5.06 GB and 7.9 / 29 / 44 s (a calloc failure and a SimGrid
  // backtrace under a 6 GB cap); all_gather and reduce_scatter 1.17 GB and 16 s at 8192, all_gather
  // 2.34 GB and 35 s at 16384; broadcast, reduce, gather and scatter 0.50-0.69 GB and at most 2.8 s at
  // 8192; sendrecv 0.33 GB (the topology alone). The ring collectives are simulated over at most 16384
  // GPUs (2048 DGX-1, about 2.5 GB), the others over at most 32768 (about 2.8 GB); sendrecv over any.
  const bool ring_collective =
      *op == CollectiveOp::AllReduce || *op == CollectiveOp::AllGather || *op == CollectiveOp::ReduceScatter;
  const int max_gpus = ring_collective ? 16384 : 32768;
  const double kib_per_gpu = ring_collective ? 156 : 84;  // dgx1-v100, at 8192 GPUs
  if (*op != CollectiveOp::AllToAll && *op != CollectiveOp::SendRecv && n > max_gpus)
    throw InputError(a.nodes ? "--nodes" : "--topology", "",
                     fmt::format("{} over {} GPUs ({} nodes x {}) would take about {:.1f} GB of simulator memory (up to "
                                 "{:.0f} KB per GPU, measured on dgx1-v100); dtsim simulates it over at most {} GPUs "
                                 "(expected fewer nodes)",
                                 op_name, n, topology.nodes, topology.gpus_per_node, kib_per_gpu * 1024 * n / 1e9,
                                 kib_per_gpu * 1.024, max_gpus));
  const auto points = simulate_nccl_tests_sweep(
      topology, *op, by_step ? nccl_tests_sweep_sizes_by_step(lo, hi, step) : nccl_tests_sweep_sizes(lo, hi, factor),
      options, a.root, nccl_tests_type_bytes(a.datatype));

  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& p : points) {
      const double algbw = p.time_us > 0 ? p.size.algbw_bytes / 1e9 / (p.time_us * 1e-6) : 0.0;
      rows.push_back({{"bytes", p.size.bytes}, {"count", p.size.count}, {"time_us", p.time_us}, {"algbw_GBps", algbw},
                      {"busbw_GBps", algbw * nccl_tests_busbw_factor(op_name, n)}, {"algorithm", p.algorithm},
                      {"nccl_model_time_us", p.model_us}});
    }
    fmt::print("{}\n", nlohmann::json{{"simulated", true}, {"topology", topology.name}, {"nodes", topology.nodes},
                                      {"gpu", topology.gpu.name}, {"op", op_name}, {"redop", redop},
                                      {"datatype", a.datatype}, {"ranks", n}, {"threads", threads},
                                      {"gpus_per_thread", options.gpus_per_thread},
                                      {"calibration", calibration}, {"nccl_algo", a.algo}, {"nccl_proto", a.proto},
                                      {"rows", rows}}.dump(2));
    return 0;
  }
  NcclTestsTable table;
  table.op = op_name;
  table.ranks = n;
  table.gpus_per_thread = options.gpus_per_thread;
  table.threads = threads;
  table.min_bytes = lo;
  table.max_bytes = hi;
  table.factor = factor;
  table.step_bytes = by_step ? step : 0;
  table.warmup_iters = a.warmup_iters;
  table.iters = a.iters;
  table.check_iters = a.check_iters;
  table.datatype = a.datatype;
  table.redop = redop;
  table.comments.push_back("dtsim nccl-tests: SIMULATED prediction, not a measurement");
  table.comments.push_back(fmt::format("topology: {} ({} node(s) x {} GPU(s), {})", topology.name, topology.nodes,
                                       topology.gpus_per_node, topology.gpu.name));
  table.comments.push_back(fmt::format("calibration: {}", calibration.empty() ? "none (preset defaults)" : calibration));
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
                                           r, 0, r / (options.gpus_per_thread * threads), fmt::format("node{}", std::max(d.node, 0)), d.local_index, 0, 0, 0,
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
  cmd->add_option("-o,--op", args->ops,
                  "the collective (all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, scatter, alltoall, "
                  "sendrecv) and/or, as nccl-tests -o, the reduction (sum, prod, max, min, avg, mulsum); may be repeated");
  cmd->add_option("-b,--minbytes", args->min_bytes, "smallest size (K/M/G suffixes)");
  cmd->add_option("-e,--maxbytes", args->max_bytes, "largest size (K/M/G suffixes)");
  cmd->add_option("-f,--stepfactor", args->factor, "multiplicative step (default 2)");
  cmd->add_option("-i,--stepbytes", args->step, "additive step, used when no -f is given (K/M/G suffixes)");
  cmd->add_option("-t,--nthreads", args->threads, "threads per process, as nccl-tests -t");
  cmd->add_option("-n,--iters", args->iters, "timed iterations (recorded; every simulated iteration takes the same time)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("-w,--warmup_iters", args->warmup_iters, "warm-up iterations (recorded; a simulation needs none)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("-c,--check", args->check_iters, "correctness-check iterations (recorded; #wrong reads N/A)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("-d,--datatype", args->datatype, "nccl-tests data type: int8, uint8, int32, uint32, int64, uint64, "
                                                   "half, float, double, bfloat16, f8e4m3, f8e5m2 (sizes, counts)");
  cmd->add_option("-a,--average", args->average, "0 rank 0, 1 mean, 2 min, 3 max over ranks (all equal in a simulation)")
      ->check(CLI::Range(0, 3));
  cmd->add_option("-z,--blocking", args->blocking, "0 only: blocking collectives are not modelled");
  cmd->add_option("-m,--agg_iters", args->agg_iters, "1 only: aggregated operations are not modelled");
  cmd->add_option("-G,--cudagraph", args->cudagraph, "0 only: CUDA graph launches are not modelled");
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
