#include "calibration/bandwidth_validate.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <numeric>

namespace dtsim::calibration {

BandwidthValidation compare_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log,
                                          const std::string& file, std::vector<int> gpu_order)
{
  const Matrix& measured = !log.unidir_p2p_GBps.empty() ? log.unidir_p2p_GBps : log.unidir_nop2p_GBps;
  if (measured.empty())
    throw InputError(file, "", "no GPU-to-GPU bandwidth matrix to validate (expected a p2pBandwidthLatencyTest, "
                               "nvbandwidth or dtsim-bench-link peer matrix)");
  if (measured.size() > static_cast<std::size_t>(topology.gpus_per_node))
    throw InputError(file, "", fmt::format("the matrix has {} GPUs, the topology's node {} (expected at most {})",
                                           measured.size(), topology.gpus_per_node, topology.gpus_per_node));
  if (gpu_order.empty()) {
    gpu_order.resize(measured.size());
    std::iota(gpu_order.begin(), gpu_order.end(), 0);
  }
  std::vector<char> taken(static_cast<std::size_t>(topology.gpus_per_node), 0);
  bool permutation = gpu_order.size() == measured.size();
  for (int g : gpu_order) {
    permutation = permutation && g >= 0 && g < topology.gpus_per_node && !taken[static_cast<std::size_t>(g)];
    if (permutation)
      taken[static_cast<std::size_t>(g)] = 1;
  }
  if (!permutation)
    throw InputError("--gpu-order", "",
                     fmt::format("expected {} distinct GPUs of node 0 (0 to {}), one per GPU of the log's matrix, got {}",
                                 measured.size(), topology.gpus_per_node - 1, fmt::join(gpu_order, ",")));

  BandwidthValidation v;
  v.what = fmt::format("{}: unidirectional GPU-to-GPU bandwidth, measured vs the route's bottleneck", log.format);
  v.gpu_order = gpu_order;
  const auto& gpus = topology.gpus();
  std::vector<double> errors;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    for (std::size_t j = 0; j < measured[i].size() && j < measured.size(); ++j) {
      if (i == j || !has_value(measured[i][j]) || measured[i][j] <= 0)
        continue;
      BandwidthValidationRow r;
      r.src = static_cast<int>(i);
      r.dst = static_cast<int>(j);
      r.topology_src = gpu_order[i];
      r.topology_dst = gpu_order[j];
      const auto& route = topology.route(gpus[static_cast<std::size_t>(r.topology_src)],
                                         gpus[static_cast<std::size_t>(r.topology_dst)]);
      r.measured_GBps = measured[i][j];
      r.predicted_GBps = topology.route_bandwidth(route) / 1e9;
      r.error = r.predicted_GBps / r.measured_GBps - 1;
      errors.push_back(std::abs(r.error));
      v.rows.push_back(r);
    }
  }
  v.median_abs_error = errors.empty() ? 0.0 : median_of(errors);
  return v;
}

std::string format_bandwidth_validation(const BandwidthValidation& v)
{
  bool identity = true;
  for (std::size_t i = 0; i < v.gpu_order.size(); ++i)
    identity = identity && v.gpu_order[i] == static_cast<int>(i);
  std::string out = fmt::format("# {}\n", v.what);
  out += identity ? "# GPU i of the log is taken as GPU i of node 0: a machine numbered differently shows as large "
                    "errors on the pairs it permutes (--gpu-order)\n"
                  : fmt::format("# GPU i of the log is taken as GPU {} of node 0 (--gpu-order)\n",
                                fmt::join(v.gpu_order, ","));
  out += "#  src  dst  measured_GBps  predicted_GBps   error\n";
  for (const auto& r : v.rows)
    out += fmt::format("  {:>4} {:>4} {:>13.2f} {:>15.2f} {:>+7.1f}%\n", r.src, r.dst, r.measured_GBps, r.predicted_GBps,
                       r.error * 100);
  out += fmt::format("# median |bandwidth error| over {} GPU pairs: {:.1f}%\n", v.rows.size(), v.median_abs_error * 100);
  return out;
}

std::string validate_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log, const std::string& file,
                                   std::vector<int> gpu_order)
{
  return format_bandwidth_validation(compare_bandwidth_log(topology, log, file, std::move(gpu_order)));
}

}  // namespace dtsim::calibration
