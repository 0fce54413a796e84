#include "calibration/nccl_validate.hpp"

#include "calibration/least_squares.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

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
  return run;
}

ValidationResult validate_log(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options)
{
  check_log_ranks(topology, log);
  const CollectiveOptions run = log_run_options(topology, log, options);
  const auto points = simulate_nccl_tests_sweep(topology, log_collective(log), log_sizes(log), run);
  ValidationResult result = compare_with_log(log, points, static_cast<int>(topology.gpus().size()));
  result.gpus_per_thread = run.gpus_per_thread;
  return result;
}

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result)
{
  std::string out = fmt::format("# dtsim validate: {} ({}, {} rows)\n", log.path, log.op, log.rows.size());
  out += fmt::format("# kernel launches per thread: {} ({})\n", result.gpus_per_thread,
                     log.gpus_per_thread > 0 ? "the log's nGpus" : "no nGpus in the log: the usual run, -g <GPUs> on one node, -g 1 across nodes");
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
