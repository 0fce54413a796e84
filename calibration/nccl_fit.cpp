#include "calibration/nccl_fit.hpp"

#include "calibration/nccl_sensitivity.hpp"

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

namespace {

/// One fitted row: its (algorithm, protocol) class, the split of the simulated time into start-up
/// hops and transfer, and which rate parameters the transfer scales with (1 / parameter), how much
/// of it each: the protocol's own rate for LL and LL128, else the link efficiencies the simulation
/// shows it depends on (nccl_sensitivity).
struct FitRow {
  int cls = 0;  ///< algo * 3 + proto
  std::vector<std::pair<std::string, double>> shares;  ///< (parameter, us of the transfer)
  double launches = 1;  ///< kernel launches one thread makes (nccl-tests -g)
  double measured = 0, predicted = 0, base = 0, hops = 0, net_hops = 0, transfer = 0;  ///< hops: intra-node; net_hops: inter-node
};

}  // namespace

namespace {

/// One linearised fit from `start` (see fit_nccl_params).
NcclFitResult fit_once(const Topology& machine, const std::vector<NcclTestsLog>& logs, const NcclParams& start,
                       std::uint64_t max_bytes)
{
  // The physics per class: every row belongs to the (algorithm, protocol) NCCL picks for it; its
  // time = launch + base + scale[class] x hops + sum over its shares of share x factor[rate], the
  // rest of its transfer as simulated. Only what the rows identify is fitted: a class's hop scale
  // when it has rows, a rate when at least 3 rows spend more than half their time in its share;
  // the rest keeps `start`.
  NcclFitResult fit;
  fit.params = start;
  CollectiveOptions options;
  options.params = start;
  std::vector<FitRow> rows;
  for (const auto& log : logs) {
    const Topology topology = log_topology(machine, log);  // the GPUs the log's run used
    const int n = static_cast<int>(topology.gpus().size());
    const NcclSystem system = make_comm_layout(topology, topology.gpus()).system;
    check_log_ranks(topology, log);
    const CollectiveOp op = log_collective(log);
    options.gpus_per_thread = log_gpus_per_thread(topology, log);
    options.filter = log_filter(log);  // a forced table's rows are all of the class it forced
    const auto points = simulate_nccl_tests_sweep(topology, op, log_sizes(log), options);
    fit.before.push_back(compare_with_log(log, points, n));
    std::vector<FitRow> log_rows;
    std::vector<std::uint64_t> link_bound_sizes;  // Simple and NVLS rows: bound by links
    std::vector<double> link_bound_us;
    for (std::size_t i = 0; i < log.rows.size(); ++i) {
      const auto& row = log.rows[i];
      if (max_bytes > 0 && row.size > max_bytes)
        continue;
      CollectiveCall call;
      call.op = op;
      call.ranks = topology.gpus();
      call.bytes = static_cast<double>(points[i].size.bytes);
      const NcclCost cost = choose_collective_algorithm(topology, call, options.filter);
      FitRow f;
      f.cls = static_cast<int>(cost.algo) * kNcclProtos + static_cast<int>(cost.proto);
      const NcclLatencyParts parts = collective_latency_parts(system, op, cost);
      f.base = parts.base;
      f.hops = parts.intra;
      f.net_hops = parts.inter;
      f.launches = options.gpus_per_thread;
      const double startup = collective_startup_us(parts, cost, start, options.gpus_per_thread);
      f.predicted = points[i].time_us;
      f.transfer = std::max(0.0, points[i].time_us - startup);
      f.measured = 0.5 * (row.out_of_place.time_us + row.in_place.time_us);
      if (f.measured <= 0)
        continue;
      if (cost.proto == NcclProto::LL || cost.proto == NcclProto::LL128) {
        f.shares.emplace_back(cost.proto == NcclProto::LL ? "ll_rate_scale" : "ll128_rate_scale", f.transfer);
      } else {
        link_bound_sizes.push_back(points[i].size.bytes);
        link_bound_us.push_back(f.predicted);
      }
      log_rows.push_back(std::move(f));
    }
    if (!link_bound_sizes.empty()) {
      const auto shares = efficiency_shares(topology, op, link_bound_sizes, options, link_bound_us);
      std::size_t k = 0;
      for (auto& f : log_rows) {
        if (!f.shares.empty())
          continue;
        const auto algo = static_cast<NcclAlgo>(f.cls / kNcclProtos);
        const auto proto = static_cast<NcclProto>(f.cls % kNcclProtos);
        for (const auto& s : shares)
          if (s.us[k] > 0 && link_share_applies(s.name, algo, proto))
            f.shares.emplace_back(s.name, std::min(s.us[k], f.transfer));
        ++k;
      }
    }
    rows.insert(rows.end(), log_rows.begin(), log_rows.end());
  }
  if (rows.size() < 3)
    throw InputError(logs.empty() ? "calibrate" : logs[0].path, "",
                     "too few rows to fit (need at least 3 rows within the size limit)");
  // Columns: launch, one hop scale per class, the network hop scale, one factor per
  // identifiable efficiency. A latency column is free only where the rows identify it; otherwise
  // it keeps `start`:
  // - launch: at least 3 rows at the latency floor (transfer under a tenth of the time): there the
  //   time is launch + the cheapest class's start-up. Rows of 1 MiB and more, half start-up on a
  //   slow cluster, would take any start-up excess as a launch cost and carry it to every size;
  // - a class's hop scale: at least 3 rows of that class, 2 of them spending a tenth of their time
  //   or more in start-up (a Simple class picked from 256 KiB on a slow link is such a class,
  //   though none of its rows is latency-bound);
  // - a protocol's network hop scale: at least 3 of its rows that cross nodes, 2 of them a tenth in
  //   start-up (NCCL tabulates each protocol's NET latency apart: LL128 rows say nothing of LL's).
  // Multi-node ring rows fit neither: their intra-node steps are paced by the network proxy
  // (max(intraLat, netOverhead) in tuning.cc), so a class scale fitted there would mislead one
  // node, and only 2 (nodes - 1) of their 2 (ranks - 1) steps cross the network, so a network
  // scale fitted there would carry the other steps' error to trees (a 2 x 8 H100 Ring table drove
  // the Simple network scale to its bound, 0.1, and NVLSTree's start-up with it).
  std::vector<int> classes;
  int floor_rows = 0;
  std::array<int, kNcclProtos> net_rows{}, net_latency_rows{};
  std::vector<std::string> effs;
  std::map<std::string, int> bandwidth_rows;
  std::map<int, int> class_rows, class_latency_rows;
  for (const auto& f : rows) {
    const bool startup_shows = f.predicted - f.transfer >= 0.1 * f.predicted;
    const bool multi_node_ring = f.net_hops > 0 && f.cls / kNcclProtos == static_cast<int>(NcclAlgo::Ring);
    if (f.net_hops > 0 && !multi_node_ring) {
      ++net_rows[static_cast<std::size_t>(f.cls % kNcclProtos)];
      net_latency_rows[static_cast<std::size_t>(f.cls % kNcclProtos)] += startup_shows ? 1 : 0;
    }
    if (f.hops > 0 && !multi_node_ring) {
      ++class_rows[f.cls];
      class_latency_rows[f.cls] += startup_shows ? 1 : 0;
    }
    for (const auto& [name, us] : f.shares)
      if (us > 0.5 * f.predicted)
        ++bandwidth_rows[name];
    if (f.transfer < 0.1 * f.predicted)
      ++floor_rows;
  }
  for (const auto& [cls, count] : class_rows)
    if (count >= 3 && class_latency_rows[cls] >= 2)
      classes.push_back(cls);
  const bool fit_launch = floor_rows >= 3;
  std::vector<int> net_protos;  // columns 1 + classes.size() + k
  for (int p = 0; p < kNcclProtos; ++p)
    if (net_rows[static_cast<std::size_t>(p)] >= 3 && net_latency_rows[static_cast<std::size_t>(p)] >= 2)
      net_protos.push_back(p);
  const std::size_t net = net_protos.size();
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
    const auto np = std::find(net_protos.begin(), net_protos.end(), f.cls % kNcclProtos);
    if (np != net_protos.end())
      r[1 + classes.size() + static_cast<std::size_t>(np - net_protos.begin())] = f.net_hops / f.measured;
    else
      yi -= start.net_hop_scale(f.cls % kNcclProtos) * f.net_hops / f.measured;
    // The transfer's shares that scale with a fitted rate are columns; the rest stays as simulated.
    double fixed = f.transfer;
    for (const auto& [name, us] : f.shares) {
      const auto e = std::find(effs.begin(), effs.end(), name);
      if (e == effs.end())
        continue;
      r[1 + classes.size() + net + static_cast<std::size_t>(e - effs.begin())] += us / f.measured;
      fixed -= us;
    }
    yi -= fixed / f.measured;
    x.push_back(std::move(r));
    y.push_back(yi);
  }
  // Bounded least squares: each column is fitted, held at its `start` value, or held at its lower
  // bound (launch 0; hop scales kMinHopScale, a hop never costs nothing; efficiency and rate
  // factors within [1/kMaxFactor, kMaxFactor]). Launch moves only when identified (above). Rows the
  // first fit misses by far (a noisy 256 B row of +100% would pull every latency term) are left out
  // of a second fit.
  constexpr double kMinHopScale = 0.1, kMaxFactor = 5.0, kOutlierFloor = 0.05;
  const std::size_t latency_cols = 1 + classes.size() + net;
  std::vector<BoundedColumn> columns(m, BoundedColumn{1.0, 1 / kMaxFactor, kMaxFactor, true});
  columns[0] = {start.launch_overhead_us, 0.0, std::numeric_limits<double>::infinity(), fit_launch};
  for (std::size_t k = 0; k < classes.size(); ++k)
    columns[1 + k] = {start.hop_scale(classes[k] / kNcclProtos, classes[k] % kNcclProtos), kMinHopScale,
                      std::numeric_limits<double>::infinity(), true};
  for (std::size_t k = 0; k < net; ++k)
    columns[1 + classes.size() + k] = {start.net_hop_scale(net_protos[k]), kMinHopScale,
                                       std::numeric_limits<double>::infinity(), true};
  const BoundedFit solved = robust_bounded_least_squares(x, y, columns, kOutlierFloor);
  const std::vector<double>& best = solved.values;
  auto moved = [&](std::size_t col) { return solved.states[col] != ColumnState::Start; };
  fit.rows_dropped = solved.rows_dropped;
  fit.params.launch_overhead_us = best[0];
  nlohmann::json class_scales = nlohmann::json::object();
  for (std::size_t k = 0; k < classes.size(); ++k) {
    if (!moved(1 + k))
      continue;
    const int a = classes[k] / kNcclProtos, p = classes[k] % kNcclProtos;
    fit.params.class_hop_latency_scale[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)] = best[1 + k];
    class_scales[std::string(to_string(static_cast<NcclAlgo>(a))) + "/" + to_string(static_cast<NcclProto>(p))] =
        best[1 + k];
  }
  nlohmann::json net_scales = nlohmann::json::object();
  for (std::size_t k = 0; k < net; ++k) {
    if (!moved(1 + classes.size() + k))
      continue;
    fit.params.net_proto_hop_latency_scale[static_cast<std::size_t>(net_protos[k])] = best[1 + classes.size() + k];
    net_scales[to_string(static_cast<NcclProto>(net_protos[k]))] = best[1 + classes.size() + k];
  }
  fit.efficiency_fitted.clear();
  for (std::size_t k = 0; k < effs.size(); ++k) {
    const std::size_t col = latency_cols + k;
    if (!moved(col))
      continue;
    // A link carries at most its line rate (efficiency 1); LL and LL128 rate scales multiply
    // NCCL's own estimates of those protocols and may exceed them.
    const bool link = effs[k].ends_with("_efficiency");
    double& eff = nccl_rate_parameter(fit.params, effs[k]);
    eff = std::min(link ? 1.0 : 1.5, eff / best[col]);
    fit.efficiency_fitted += (fit.efficiency_fitted.empty() ? "" : ", ") + effs[k];
  }
  if (fit.efficiency_fitted.empty())
    fit.efficiency_fitted = "none (too few bandwidth-bound rows; efficiencies kept)";
  // What the logs leave unconstrained, and so carry to another configuration as preset: a link
  // class that bounds no fitted row (a 2-node NVLSTree run never loads its NICs to the limit).
  nlohmann::json kept = nlohmann::json::object();
  fit.efficiency_kept.clear();
  for (const std::string& name : candidate_link_efficiencies(machine)) {
    const auto e = std::find(effs.begin(), effs.end(), name);
    if (e != effs.end() && moved(latency_cols + static_cast<std::size_t>(e - effs.begin())))
      continue;
    double largest = 0;
    for (const auto& f : rows)
      for (const auto& [share_name, us] : f.shares)
        if (share_name == name && f.predicted > 0)
          largest = std::max(largest, us / f.predicted);
    const double value = nccl_rate_parameter(fit.params, name);
    kept[name] = {{"value", value}, {"largest_share_of_a_row_time", largest}};
    fit.efficiency_kept += fmt::format("{}{} {:.3g} (at most {:.0f}% of a fitted row's time)",
                                       fit.efficiency_kept.empty() ? "" : ", ", name, value, 100 * largest);
  }
  options.params = fit.params;
  options.filter = {};  // validate_log applies each log's own
  std::vector<double> large, small;
  for (const auto& log : logs) {
    fit.after.push_back(validate_log(machine, log, options));
    for (const auto& r : fit.after.back().rows)
      (static_cast<double>(r.size) >= kMiB ? large : small).push_back(r.busbw_error);
  }
  auto json_median = [](const std::vector<double>& errors) {
    const double m = median_abs(errors);
    return std::isnan(m) ? nlohmann::json() : nlohmann::json(m);
  };
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& log : logs)
    sources.push_back(log.path);
  fit.fragment = {{"sources", sources},
                  {"nccl", fit.params.to_json()},
                  {"fit",
                   {{"rows_fitted", solved.rows_used},
                    {"rows_dropped_as_outliers", fit.rows_dropped},
                    {"max_bytes", max_bytes},
                    {"efficiency_fitted", fit.efficiency_fitted},
                    {"efficiency_kept", kept},
                    {"classes_fitted", class_scales},
                    {"net_protocols_fitted", net_scales},
                    {"rms_relative_time_error", std::sqrt(solved.cost / static_cast<double>(solved.rows_used))},
                    {"median_abs_busbw_error_ge_1MiB", json_median(large)},
                    {"median_abs_busbw_error_lt_1MiB", json_median(small)}}}};
  return fit;
}

/// Root mean square of the relative time errors, after the fit, of the rows it was fitted on.
double rms_after(const NcclFitResult& fit, std::uint64_t max_bytes)
{
  double sum = 0;
  int n = 0;
  for (const auto& result : fit.after)
    for (const auto& r : result.rows)
      if (max_bytes == 0 || r.size <= max_bytes) {
        sum += r.busbw_error * r.busbw_error;
        ++n;
      }
  return n > 0 ? std::sqrt(sum / n) : 0.0;
}

}  // namespace

NcclFitResult fit_nccl_params(const Topology& topology, const std::vector<NcclTestsLog>& logs, const NcclParams& start,
                              std::uint64_t max_bytes)
{
  // Each row's transfer time is linearised in the one efficiency of its bottleneck, but some move
  // together (an LL128 ring's rate is the NVLink rate times LL128's own scale), so one pass that
  // moves both overshoots. Passes from the previous result settle that; the first pass's
  // "before" stays the comparison with `start`.
  constexpr int kMaxPasses = 4;
  NcclFitResult fit = fit_once(topology, logs, start, max_bytes);
  double rms = rms_after(fit, max_bytes);
  int passes = 1;
  for (int pass = 1; pass < kMaxPasses; ++pass) {
    NcclFitResult next = fit_once(topology, logs, fit.params, max_bytes);
    const double next_rms = rms_after(next, max_bytes);
    if (!(next_rms < 0.999 * rms))
      break;
    next.before = std::move(fit.before);
    fit = std::move(next);
    rms = next_rms;
    ++passes;
  }
  fit.fragment["fit"]["passes"] = passes;
  return fit;
}

}  // namespace dtsim
