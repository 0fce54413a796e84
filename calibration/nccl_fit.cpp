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
#include <map>

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

/// Which parameter scales the transfer time of a row: the LL and LL128 rates for those protocols
/// (their own physics), else the efficiency of the communicator's bottleneck link class.
std::string bottleneck_efficiency(const Topology& topology, NcclAlgo algo, NcclProto proto, const NcclParams& p)
{
  if (proto == NcclProto::LL)
    return "ll_rate_scale";
  if (proto == NcclProto::LL128)
    return "ll128_rate_scale";
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
  if (name == "ll_rate_scale")
    return p.ll_rate_scale;
  if (name == "ll128_rate_scale")
    return p.ll128_rate_scale;
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

/// Least squares on rows x -> y with only the columns in `active` free (the others 0).
bool solve(const std::vector<std::vector<double>>& x, const std::vector<double>& y, const std::vector<bool>& active,
           std::vector<double>& out)
{
  const std::size_t m = active.size();
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t c = 0; c < m; ++c)
        a[r][c] += x[i][r] * x[i][c];
      a[r][m] += x[i][r] * y[i];
    }
  for (std::size_t r = 0; r < m; ++r)
    if (!active[r]) {
      std::fill(a[r].begin(), a[r].end(), 0.0);
      for (std::size_t c = 0; c < m; ++c)
        a[c][r] = 0;
      a[r][r] = 1;
    }
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < m; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c]))
        piv = r;
    if (std::fabs(a[piv][c]) < 1e-300)
      return false;
    std::swap(a[c], a[piv]);
    for (std::size_t r = 0; r < m; ++r)
      if (r != c) {
        const double f = a[r][c] / a[c][c];
        for (std::size_t k = 0; k <= m; ++k)
          a[r][k] -= f * a[c][k];
      }
  }
  out.assign(m, 0.0);
  for (std::size_t r = 0; r < m; ++r)
    out[r] = a[r][m] / a[r][r];
  return true;
}

/// One fitted row: its (algorithm, protocol) class, the efficiency its transfer time scales with,
/// and the split of the simulated time into start-up hops and transfer.
struct FitRow {
  int cls = 0;  ///< algo * 3 + proto
  std::string efficiency;
  double launches = 1;  ///< kernel launches one thread makes (nccl-tests -g)
  double measured = 0, predicted = 0, base = 0, hops = 0, net_hops = 0, transfer = 0;  ///< hops: intra-node; net_hops: inter-node
};

}  // namespace

int log_gpus_per_thread(const Topology& topology, const NcclTestsLog& log)
{
  return log.gpus_per_thread > 0 ? log.gpus_per_thread : usual_gpus_per_thread(topology);
}

ValidationResult validate_log(const Topology& topology, const NcclTestsLog& log, const CollectiveOptions& options)
{
  check_ranks(topology, log);
  CollectiveOptions run = options;
  run.gpus_per_thread = log_gpus_per_thread(topology, log);
  const auto points = simulate_nccl_tests_sweep(topology, log_collective(log), log_sizes(log), run);
  ValidationResult result = compare(log, points, static_cast<int>(topology.gpus().size()));
  result.gpus_per_thread = run.gpus_per_thread;
  return result;
}

std::string format_validation(const NcclTestsLog& log, const ValidationResult& result)
{
  std::string out = fmt::format("# dtsim validate: {} ({}, {} rows)\n", log.path, log.op, log.rows.size());
  out += fmt::format("# kernel launches per thread: {} ({})\n", result.gpus_per_thread,
                     log.gpus_per_thread > 0 ? "the log's nGpus" : "no nGpus in the log: the usual run, -g <GPUs> on one node, -g 1 across nodes");
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
  // The physics per class: every row belongs to the (algorithm, protocol) NCCL picks for it; its
  // time = launch + base + scale[class] x hops + transfer x factor[efficiency of its bottleneck].
  // Only what the rows identify is fitted: a class's hop scale when it has rows, a link class's
  // efficiency when at least 3 of its rows are mostly transfer; the rest keeps `start`.
  NcclFitResult fit;
  fit.params = start;
  CollectiveOptions options;
  options.params = start;
  const int n = static_cast<int>(topology.gpus().size());
  const NcclSystem system = make_comm_layout(topology, topology.gpus()).system;
  std::vector<FitRow> rows;
  for (const auto& log : logs) {
    check_ranks(topology, log);
    const CollectiveOp op = log_collective(log);
    options.gpus_per_thread = log_gpus_per_thread(topology, log);
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
      FitRow f;
      f.cls = static_cast<int>(cost.algo) * kNcclProtos + static_cast<int>(cost.proto);
      f.efficiency = bottleneck_efficiency(topology, cost.algo, cost.proto, start);
      const NcclLatencyParts parts = collective_latency_parts(system, op, cost);
      f.base = parts.base;
      f.hops = parts.intra;
      f.net_hops = parts.inter;
      f.launches = options.gpus_per_thread;
      const double startup = collective_startup_us(parts, cost, start, options.gpus_per_thread);
      f.predicted = points[i].time_us;
      f.transfer = std::max(0.0, points[i].time_us - startup);
      f.measured = 0.5 * (row.out_of_place.time_us + row.in_place.time_us);
      if (f.measured > 0)
        rows.push_back(f);
    }
  }
  if (rows.size() < 3)
    throw InputError(logs.empty() ? "calibrate" : logs[0].path, "",
                     "too few rows to fit (need at least 3 rows within the size limit)");
  // Columns: launch, one hop scale per class, the network hop scale, one factor per
  // identifiable efficiency. A latency column is free only where the rows identify it; otherwise
  // it keeps `start`:
  // - launch: at least 3 latency-bound rows (a log of large sizes alone does not pin it);
  // - a class's hop scale: at least 3 rows of that class, 2 of them spending a tenth of their time
  //   or more in start-up (a Simple class picked from 256 KiB on a slow link is such a class,
  //   though none of its rows is latency-bound). Multi-node ring rows do not fit class scales: their
  //   intra-node steps are paced by the network proxy (max(intraLat, netOverhead) in tuning.cc), and
  //   a scale fitted there would mislead one node;
  // - the network hop scale: at least 3 rows that cross nodes, 2 of them a tenth in start-up.
  std::vector<int> classes;
  int latency_rows = 0, net_rows = 0, net_latency_rows = 0;
  std::vector<std::string> effs;
  std::map<std::string, int> bandwidth_rows;
  std::map<int, int> class_rows, class_latency_rows;
  for (const auto& f : rows) {
    const bool startup_shows = f.predicted - f.transfer >= 0.1 * f.predicted;
    if (f.net_hops > 0) {
      ++net_rows;
      net_latency_rows += startup_shows ? 1 : 0;
    }
    if (f.hops > 0 && !(f.net_hops > 0 && f.cls / kNcclProtos == static_cast<int>(NcclAlgo::Ring))) {
      ++class_rows[f.cls];
      class_latency_rows[f.cls] += startup_shows ? 1 : 0;
    }
    if (f.transfer > 0.5 * f.predicted)
      ++bandwidth_rows[f.efficiency];
    else
      ++latency_rows;
  }
  for (const auto& [cls, count] : class_rows)
    if (count >= 3 && class_latency_rows[cls] >= 2)
      classes.push_back(cls);
  const bool fit_launch = latency_rows >= 3;
  const std::size_t net = net_rows >= 3 && net_latency_rows >= 2 ? 1 : 0;  // index 1 + classes.size() when fitted
  for (const auto& [name, count] : bandwidth_rows)
    if (count >= 3)
      effs.push_back(name);
  const std::size_t m = 1 + classes.size() + net + effs.size();
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& f : rows) {
    std::vector<double> r(m, 0.0);
    double yi = 1.0 - f.base / f.measured;
    r[0] = f.launches / f.measured;
    const auto c = std::find(classes.begin(), classes.end(), f.cls);
    if (c != classes.end())
      r[1 + static_cast<std::size_t>(c - classes.begin())] = f.hops / f.measured;
    else
      yi -= start.hop_scale(f.cls / kNcclProtos, f.cls % kNcclProtos) * f.hops / f.measured;
    if (net)
      r[1 + classes.size()] = f.net_hops / f.measured;
    else
      yi -= start.net_hop_latency_scale * f.net_hops / f.measured;
    const auto e = std::find(effs.begin(), effs.end(), f.efficiency);
    if (e != effs.end())
      r[1 + classes.size() + net + static_cast<std::size_t>(e - effs.begin())] = f.transfer / f.measured;
    else
      yi -= f.transfer / f.measured;
    x.push_back(std::move(r));
    y.push_back(yi);
  }
  // Bounded least squares by enumeration: each column is fitted, held at its `start` value, or
  // held at its lower bound (launch 0; hop scales kMinHopScale, a hop never costs nothing;
  // efficiency and rate factors 1/kMaxFactor, with kMaxFactor above). A fitted value must lie
  // within its bounds; the cheapest assignment wins. Launch is free only when identified (above).
  constexpr double kMinHopScale = 0.1, kMaxFactor = 5.0;
  const std::size_t latency_cols = 1 + classes.size() + net;
  std::vector<double> start_value(m, 1.0), lower(m, 1 / kMaxFactor);
  start_value[0] = start.launch_overhead_us;
  lower[0] = 0;
  for (std::size_t k = 0; k < classes.size(); ++k)
    start_value[1 + k] = start.hop_scale(classes[k] / kNcclProtos, classes[k] % kNcclProtos);
  if (net)
    start_value[1 + classes.size()] = start.net_hop_latency_scale;
  for (std::size_t k = 1; k < latency_cols; ++k)
    lower[k] = kMinHopScale;
  enum State { Free, Start, Lower };
  std::vector<double> best = start_value;
  std::vector<int> best_state(m, Start);
  double best_cost = std::numeric_limits<double>::infinity();
  std::size_t assignments = 1;
  for (std::size_t k = 0; k < m; ++k)
    assignments *= 3;
  // One bounded fit on the rows `x`, `y`.
  auto fit_on = [&](const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  best = start_value;
  best_state.assign(m, Start);
  best_cost = std::numeric_limits<double>::infinity();
  for (std::size_t code = 0; code < assignments; ++code) {
    std::vector<int> state(m);
    for (std::size_t k = 0, c = code; k < m; ++k, c /= 3)
      state[k] = static_cast<int>(c % 3);
    if (!fit_launch && state[0] != Start)
      continue;
    std::vector<bool> active(m);
    std::vector<double> held(m), yy = y;
    for (std::size_t k = 0; k < m; ++k) {
      active[k] = state[k] == Free;
      held[k] = state[k] == Lower ? lower[k] : start_value[k];
      if (!active[k])
        for (std::size_t i = 0; i < x.size(); ++i)
          yy[i] -= x[i][k] * held[k];
    }
    std::vector<double> c;
    if (!solve(x, yy, active, c))
      continue;
    bool ok = true;
    for (std::size_t k = 0; k < m; ++k) {
      if (!active[k])
        c[k] = held[k];
      else
        ok = ok && c[k] >= lower[k] && (k < latency_cols || c[k] <= kMaxFactor);
    }
    if (!ok)
      continue;
    double cost = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double r = -y[i];
      for (std::size_t k = 0; k < m; ++k)
        r += x[i][k] * c[k];
      cost += r * r;
    }
    if (cost < best_cost - 1e-12) {
      best_cost = cost;
      best = c;
      best_state = state;
    }
  }
  };
  // Robust: fit, drop the rows the fit misses by more than 3 median deviations (a noisy row such as
  // a 256 B outlier of +100% would otherwise pull every latency term), fit again.
  fit_on(x, y);
  std::vector<double> residual;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double r = -y[i];
    for (std::size_t k = 0; k < m; ++k)
      r += x[i][k] * best[k];
    residual.push_back(r);
  }
  const double limit = std::max(3 * median_abs(residual), 0.05);
  std::vector<std::vector<double>> kept_x;
  std::vector<double> kept_y;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::fabs(residual[i]) <= limit) {
      kept_x.push_back(x[i]);
      kept_y.push_back(y[i]);
    }
  fit.rows_dropped = x.size() - kept_x.size();
  if (fit.rows_dropped > 0 && kept_x.size() >= 3) {
    fit_on(kept_x, kept_y);
    x = std::move(kept_x);
  } else {
    fit.rows_dropped = 0;
  }
  fit.params.launch_overhead_us = best[0];
  nlohmann::json class_scales = nlohmann::json::object();
  for (std::size_t k = 0; k < classes.size(); ++k) {
    if (best_state[1 + k] == Start)
      continue;
    const int a = classes[k] / kNcclProtos, p = classes[k] % kNcclProtos;
    fit.params.class_hop_latency_scale[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)] = best[1 + k];
    class_scales[std::string(to_string(static_cast<NcclAlgo>(a))) + "/" + to_string(static_cast<NcclProto>(p))] =
        best[1 + k];
  }
  if (net)
    fit.params.net_hop_latency_scale = best[1 + classes.size()];
  fit.efficiency_fitted.clear();
  for (std::size_t k = 0; k < effs.size(); ++k) {
    const std::size_t col = latency_cols + k;
    if (best_state[col] == Start)
      continue;
    double& eff = efficiency_field(fit.params, effs[k]);
    eff = std::min(1.5, eff / best[col]);
    fit.efficiency_fitted += (fit.efficiency_fitted.empty() ? "" : ", ") + effs[k];
  }
  if (fit.efficiency_fitted.empty())
    fit.efficiency_fitted = "none (too few bandwidth-bound rows; efficiencies kept)";
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
                    {"rows_dropped_as_outliers", fit.rows_dropped},
                    {"max_bytes", max_bytes},
                    {"efficiency_fitted", fit.efficiency_fitted},
                    {"classes_fitted", class_scales},
                    {"net_hop_latency_scale_fitted", net == 1 && best_state[1 + classes.size()] != Start},
                    {"rms_relative_time_error", std::sqrt(best_cost / static_cast<double>(x.size()))},
                    {"median_abs_busbw_error_ge_1MiB", std::isnan(median_abs(large)) ? nlohmann::json() : nlohmann::json(median_abs(large))},
                    {"median_abs_busbw_error_lt_1MiB", std::isnan(median_abs(small)) ? nlohmann::json() : nlohmann::json(median_abs(small))}}}};
  return fit;
}

}  // namespace dtsim
