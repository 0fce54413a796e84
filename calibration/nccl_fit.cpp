#include "calibration/nccl_fit.hpp"

#include "sim/collectives/comm_layout.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace dtsim {

double median_abs(std::vector<double> v)
{
  if (v.empty())
    return std::numeric_limits<double>::quiet_NaN();
  for (auto& x : v)
    x = std::fabs(x);
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

CollectiveOp log_collective(const NcclTestsLog& log)
{
  const auto op = parse_collective_op(log.op);
  if (!op)
    throw InputError(log.path, "", fmt::format("cannot simulate the collective '{}' of this log", log.op));
  return *op;
}

namespace {

void check_ranks(const Topology& topology, const NcclTestsLog& log)
{
  const int n = static_cast<int>(topology.gpus().size());
  if (log.ranks > 0 && log.ranks != n)
    throw InputError(log.path, "",
                     fmt::format("the log is for {} ranks but the topology '{}' has {} GPUs (use --nodes or another "
                                 "topology)",
                                 log.ranks, topology.name, n));
}

std::vector<std::uint64_t> log_sizes(const NcclTestsLog& log)
{
  std::vector<std::uint64_t> sizes;
  for (const auto& r : log.rows)
    sizes.push_back(r.size);
  return sizes;
}

ValidationResult compare(const NcclTestsLog& log, const std::vector<NcclTestsPoint>& points, int ranks)
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

/// Which efficiency scales the transfer time of this communicator.
std::string bottleneck_efficiency(const Topology& topology, NcclAlgo algo, const NcclParams& p)
{
  const CommLayout layout = make_comm_layout(topology, topology.gpus());
  if (algo == NcclAlgo::Nvls || algo == NcclAlgo::NvlsTree)
    return "nvls_efficiency";
  if (layout.system.nodes > 1)
    return "network_efficiency";
  if (layout.nvlink)
    return "nvlink_efficiency";
  const auto& g = topology.gpus();
  if (g.size() > 1 && route_efficiency(topology, g[0], g[1], p) == p.pcie_shm_efficiency &&
      p.pcie_shm_efficiency != p.pcie_efficiency)
    return "pcie_shm_efficiency";
  return "pcie_efficiency";
}

double& efficiency_field(NcclParams& p, const std::string& name)
{
  if (name == "nvls_efficiency")
    return p.nvls_efficiency;
  if (name == "network_efficiency")
    return p.network_efficiency;
  if (name == "nvlink_efficiency")
    return p.nvlink_efficiency;
  if (name == "pcie_shm_efficiency")
    return p.pcie_shm_efficiency;
  return p.pcie_efficiency;
}

/// Least squares on rows x (3 columns) -> y with the columns in `active` free and the others 0.
bool solve(const std::vector<std::array<double, 3>>& x, const std::vector<double>& y, std::array<bool, 3> active,
           std::array<double, 3>& out)
{
  double a[3][4] = {};
  for (std::size_t i = 0; i < x.size(); ++i)
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c)
        a[r][c] += x[i][static_cast<std::size_t>(r)] * x[i][static_cast<std::size_t>(c)];
      a[r][3] += x[i][static_cast<std::size_t>(r)] * y[i];
    }
  for (int r = 0; r < 3; ++r)
    if (!active[static_cast<std::size_t>(r)]) {
      for (int c = 0; c < 4; ++c)
        a[r][c] = 0;
      for (int c = 0; c < 3; ++c)
        a[c][r] = 0;
      a[r][r] = 1;
    }
  for (int c = 0; c < 3; ++c) {
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c]))
        piv = r;
    if (std::fabs(a[piv][c]) < 1e-300)
      return false;
    for (int k = 0; k < 4; ++k)
      std::swap(a[c][k], a[piv][k]);
    for (int r = 0; r < 3; ++r)
      if (r != c) {
        const double f = a[r][c] / a[c][c];
        for (int k = 0; k < 4; ++k)
          a[r][k] -= f * a[c][k];
      }
  }
  for (int r = 0; r < 3; ++r)
    out[static_cast<std::size_t>(r)] = a[r][3] / a[r][r];
  return true;
}

}  // namespace

ValidationResult validate_log(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options)
{
  check_ranks(topology, log);
  const auto points = simulate_nccl_tests_sweep(topology, log_collective(log), log_sizes(log), options);
  return compare(log, points, static_cast<int>(topology.gpus().size()));
}

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result)
{
  std::string out = fmt::format("# dtsim validate: {} ({}, {} rows)\n", log.path, log.op, log.rows.size());
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

NcclFitResult fit_nccl_params(const Topology& topology, const std::vector<NcclTestsLog>& logs, const NcclParams& start,
                              std::uint64_t max_bytes)
{
  NcclFitResult fit;
  fit.params = start;
  CollectiveOptions options;
  options.params = start;
  const int n = static_cast<int>(topology.gpus().size());
  std::vector<std::array<double, 3>> x;
  std::vector<double> y;
  std::string eff_name;
  for (const auto& log : logs) {
    check_ranks(topology, log);
    const CollectiveOp op = log_collective(log);
    const auto points = simulate_nccl_tests_sweep(topology, op, log_sizes(log), options);
    fit.before.push_back(compare(log, points, n));
    for (std::size_t i = 0; i < log.rows.size(); ++i) {
      const auto& row = log.rows[i];
      if (max_bytes > 0 && row.size > max_bytes)
        continue;
      CollectiveCall call;
      call.op = op;
      call.ranks = topology.gpus();
      call.bytes = static_cast<double>(points[i].size.bytes);
      const NcclCost cost = choose_collective_algorithm(topology, call);
      if (eff_name.empty())
        eff_name = bottleneck_efficiency(topology, cost.algo, start);
      const double base = nccl_base_latency_us(cost.algo, cost.proto);
      const double hops = std::max(0.0, cost.latency_us - base);
      const double startup = start.launch_overhead_us + base + start.hop_latency_scale * hops;
      const double transfer = std::max(0.0, points[i].time_us - startup);
      const double measured = 0.5 * (row.out_of_place.time_us + row.in_place.time_us);
      if (measured <= 0)
        continue;
      x.push_back({1.0 / measured, hops / measured, transfer / measured});
      y.push_back(1.0 - base / measured);
    }
  }
  if (x.size() < 3)
    throw InputError(logs.empty() ? "calibrate" : logs[0].path, "",
                     "too few rows to fit (need at least 3 rows within the size limit)");
  // The efficiency is only identifiable from rows whose time is mostly transfer; otherwise it is
  // kept (c = 1) and only the latencies are fitted.
  int bandwidth_rows = 0;
  for (const auto& row : x)
    if (row[2] > 0.5)
      ++bandwidth_rows;
  const bool fit_efficiency = bandwidth_rows >= 3;
  if (!fit_efficiency)
    for (std::size_t i = 0; i < x.size(); ++i) {
      y[i] -= x[i][2];
      x[i][2] = 0;
    }
  std::array<double, 3> best{start.launch_overhead_us, start.hop_latency_scale, 1.0};
  double best_cost = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < 8; ++mask) {
    const std::array<bool, 3> active{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    std::array<double, 3> c{};
    if (active[2] != fit_efficiency)
      continue;  // with the efficiency fitted, the transfer time must keep a bandwidth
    if (!solve(x, y, active, c) || c[0] < 0 || c[1] < 0 || c[2] < 0 || (active[2] && c[2] < 1e-3))
      continue;
    if (!fit_efficiency)
      c[2] = 1.0;
    double cost = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = x[i][0] * c[0] + x[i][1] * c[1] + (fit_efficiency ? x[i][2] * c[2] : 0.0) - y[i];
      cost += r * r;
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  fit.params.launch_overhead_us = best[0];
  fit.params.hop_latency_scale = best[1];
  fit.efficiency_fitted = fit_efficiency ? eff_name : "none (too few bandwidth-bound rows; " + eff_name + " kept)";
  double& eff = efficiency_field(fit.params, eff_name);  // best[2] == 1 when not fitted
  eff = std::min(1.5, eff / best[2]);
  options.params = fit.params;
  std::vector<double> large, small;
  for (const auto& log : logs) {
    fit.after.push_back(validate_log(topology, log, options));
    for (const auto& r : fit.after.back().rows)
      (static_cast<double>(r.size) >= kMiB ? large : small).push_back(r.busbw_error);
  }
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& log : logs)
    sources.push_back(log.path);
  fit.fragment = {{"sources", sources},
                  {"nccl", fit.params.to_json()},
                  {"fit",
                   {{"rows_fitted", x.size()},
                    {"max_bytes", max_bytes},
                    {"efficiency_fitted", fit.efficiency_fitted},
                    {"rms_relative_time_error", std::sqrt(best_cost / static_cast<double>(x.size()))},
                    {"median_abs_busbw_error_ge_1MiB", std::isnan(median_abs(large)) ? nlohmann::json() : nlohmann::json(median_abs(large))},
                    {"median_abs_busbw_error_lt_1MiB", std::isnan(median_abs(small)) ? nlohmann::json() : nlohmann::json(median_abs(small))}}}};
  return fit;
}

}  // namespace dtsim
