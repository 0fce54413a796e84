#include "calibration/nccl_validate.hpp"

#include "calibration/least_squares.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

CollectiveOp log_collective(const NcclTestsLog& log)
{
  const auto op = parse_collective_op(log.op);
  if (!op)
    throw InputError(log.path, "", fmt::format("cannot simulate the collective '{}' of this log", log.op));
  return *op;
}

NcclFilter log_filter(const NcclTestsLog& log) { return nccl_filter_from_env(log.nccl_env, log_collective(log), log.path); }

void check_log_ranks(const Topology& topology, const NcclTestsLog& log)
{
  const int n = static_cast<int>(topology.gpus().size());
  if (log.ranks > 0 && (n < log.ranks_min || n > log.ranks_max))
    throw InputError(log.path, "",
                     fmt::format("the log is for {} ranks but the topology '{}' has {} GPUs (use --nodes or another "
                                 "topology)",
                                 log.ranks_min == log.ranks_max ? fmt::format("{}", log.ranks)
                                                                : fmt::format("{}-{}", log.ranks_min, log.ranks_max),
                                 topology.name, n));
}

Topology log_topology(const Topology& machine, const NcclTestsLog& log)
{
  const int all = static_cast<int>(machine.gpus().size());
  if (log.ranks <= 0 || log.ranks > all || log.ranks_min != log.ranks_max)
    return machine;
  std::vector<int> used;
  if (static_cast<int>(log.rank_devices.size()) == log.ranks) {
    std::vector<std::string> hosts;
    for (const auto& [host, device] : log.rank_devices) {
      auto h = std::find(hosts.begin(), hosts.end(), host);
      if (h == hosts.end())
        h = hosts.insert(hosts.end(), host);
      const int node = static_cast<int>(h - hosts.begin());
      const std::vector<int> gpus = node < machine.nodes ? machine.gpus_of_node(node) : std::vector<int>{};
      if (device < 0 || device >= static_cast<int>(gpus.size()))
        throw InputError(log.path, "",
                         fmt::format("the log's rank {} runs on {} device {}, but the topology '{}' has {} node(s) of {} "
                                     "GPUs (use --nodes or another topology)",
                                     used.size(), host, device, machine.name, machine.nodes, machine.gpus_per_node));
      if (std::find(used.begin(), used.end(), gpus[static_cast<std::size_t>(device)]) != used.end())
        throw InputError(log.path, "", fmt::format("the log lists {} device {} twice", host, device));
      used.push_back(gpus[static_cast<std::size_t>(device)]);
    }
  } else if (machine.nodes == 1) {
    used.assign(machine.gpus().begin(), machine.gpus().begin() + log.ranks);
  } else {
    return machine;  // which GPUs of which nodes: unknown, check_log_ranks says so
  }
  if (log.ranks == all)
    return machine;  // every GPU (its rank lines checked above): the machine as it is
  // The same machine (devices, links, their calibrated rates) with only `used` as ranks.
  Topology subset;
  for (const Device& d : machine.devices())
    subset.add_device(d.name, d.kind, d.node, d.local_index);
  for (const Link& l : machine.links())
    subset.add_link(l.name, l.kind, l.a, l.b, l.bandwidth, l.latency, l.lanes);
  for (int d : used)
    subset.add_gpu_rank(d);
  subset.name = machine.name;
  subset.gpu = machine.gpu;
  subset.nodes = machine.nodes;
  subset.gpu_forwarding = machine.gpu_forwarding;
  subset.pcie_p2p = machine.pcie_p2p;
  subset.host = machine.host;
  int per_node = 0, nodes = 0;
  for (int node = 0; node < machine.nodes; ++node) {
    const int here = static_cast<int>(subset.gpus_of_node(node).size());
    per_node = std::max(per_node, here);
    nodes += here > 0 ? 1 : 0;
  }
  subset.gpus_per_node = per_node;
  if (nodes == 1 && !subset.gpus_of_node(0).empty())
    subset.nodes = 1;
  return subset;
}

std::vector<std::uint64_t> log_sizes(const NcclTestsLog& log)
{
  std::vector<std::uint64_t> sizes;
  for (const auto& r : log.rows)
    sizes.push_back(r.size);
  return sizes;
}

ValidationResult compare_with_log(const NcclTestsLog& log, const std::vector<NcclTestsPoint>& points, int ranks)
{
  ValidationResult out;
  std::vector<double> large, small;
  const double factor = nccl_tests_busbw_factor(log.op, ranks);
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const auto& r = log.rows[i];
    ValidationRow v;
    v.size = r.size;
    v.measured_us = 0.5 * (r.out_of_place.time_us + r.in_place.time_us);
    v.predicted_us = points[i].time_us;
    v.measured_busbw = 0.5 * (r.out_of_place.busbw + r.in_place.busbw);
    v.predicted_busbw = v.predicted_us > 0 ? static_cast<double>(r.size) / 1e3 / v.predicted_us * factor : 0;
    v.busbw_error = v.predicted_us > 0 ? v.measured_us / v.predicted_us - 1.0 : 0;
    v.algorithm = points[i].algorithm;
    (static_cast<double>(r.size) >= kMiB ? large : small).push_back(v.busbw_error);
    out.rows.push_back(v);
  }
  out.median_abs_error_large = median_abs(large);
  out.median_abs_error_small = median_abs(small);
  return out;
}

int log_gpus_per_thread(const Topology& topology, const NcclTestsLog& log)
{
  return log.gpus_per_thread > 0 ? log.gpus_per_thread : usual_gpus_per_thread(topology);
}

CollectiveOptions log_run_options(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options)
{
  CollectiveOptions run = options;
  run.gpus_per_thread = log_gpus_per_thread(topology, log);
  const NcclFilter from_log = log_filter(log);
  if (run.filter.algos.empty())
    run.filter.algos = from_log.algos;
  if (run.filter.protos.empty())
    run.filter.protos = from_log.protos;
  if (run.filter.setting.empty()) {  // named by nccl_choose should nothing remain (the log's, with --algo/--proto)
    run.filter.source = from_log.source;
    run.filter.setting = from_log.setting;
  }
  return run;
}

ValidationResult validate_log(const Topology& machine, const NcclTestsLog& log, const CollectiveOptions& options)
{
  const Topology topology = log_topology(machine, log);
  check_log_ranks(topology, log);
  const CollectiveOptions run = log_run_options(topology, log, options);
  const auto points = simulate_nccl_tests_sweep(topology, log_collective(log), log_sizes(log), run);
  ValidationResult result = compare_with_log(log, points, static_cast<int>(topology.gpus().size()));
  result.gpus_per_thread = run.gpus_per_thread;
  result.machine_gpus = static_cast<int>(machine.gpus().size());
  if (topology.gpus().size() < machine.gpus().size())
    for (int d : topology.gpus())
      result.subset.push_back(topology.device(d).name);
  return result;
}

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result)
{
  std::string out = fmt::format("# dtsim validate: {} ({}, {} rows)\n", log.path, log.op, log.rows.size());
  out += fmt::format("# kernel launches per thread: {} ({})\n", result.gpus_per_thread,
                     log.gpus_per_thread > 0 ? "the log's nGpus" : "no nGpus in the log: the usual run, -g <GPUs> on one node, -g 1 across nodes");
  if (!result.subset.empty())
    out += fmt::format("# GPUs: the {} of the machine's {} that the log's run used: {}\n", result.subset.size(),
                       result.machine_gpus, fmt::join(result.subset, ", "));
  if (const std::string env = describe_nccl_env(log.nccl_env); !env.empty())
    out += fmt::format("# NCCL settings of the run: {}\n", env);
  out += fmt::format("# {:>12}  {:>10}  {:>10}  {:>8}  {:>8}  {:>8}  {:>7}  {}\n", "size (B)", "meas (us)", "pred (us)",
                     "meas bw", "pred bw", "bus GB/s", "error", "algorithm");
  for (const auto& r : result.rows)
    out += fmt::format("  {:>12}  {:>10.2f}  {:>10.2f}  {:>8.2f}  {:>8.2f}  {:>8}  {:>+6.1f}%  {}\n", r.size,
                       r.measured_us, r.predicted_us, r.measured_busbw, r.predicted_busbw, "", 100 * r.busbw_error,
                       r.algorithm);
  auto pct = [](double v) { return std::isnan(v) ? std::string("n/a (no rows)") : fmt::format("{:.1f}%", 100 * v); };
  out += fmt::format("# median |busbw error|, sizes >= 1 MiB: {}\n", pct(result.median_abs_error_large));
  out += fmt::format("# median |busbw error|, sizes <  1 MiB: {}\n", pct(result.median_abs_error_small));
  return out;
}

}  // namespace dtsim
