#include "calibration/bandwidth_validate.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dtsim::calibration {

namespace {

std::string table_for(const Topology& topology, const Matrix& measured, const std::string& what,
                      std::vector<double>& errors)
{
  std::string out = fmt::format("# {}\n# GPU i of the log is taken as GPU i of node 0: a machine numbered differently shows as "
                                "large errors on the pairs it permutes\n#  src  dst  measured_GBps  predicted_GBps   error\n",
                                what);
  const auto& gpus = topology.gpus();
  for (std::size_t i = 0; i < measured.size(); ++i) {
    for (std::size_t j = 0; j < measured[i].size(); ++j) {
      if (i == j || !has_value(measured[i][j]) || measured[i][j] <= 0)
        continue;
      const auto& route = topology.route(gpus[i], gpus[j]);
      const double predicted = topology.route_bandwidth(route) / 1e9;
      const double error = predicted / measured[i][j] - 1;
      errors.push_back(std::abs(error));
      out += fmt::format("  {:>4} {:>4} {:>13.2f} {:>15.2f} {:>+7.1f}%\n", i, j, measured[i][j], predicted, error * 100);
    }
  }
  return out;
}

}  // namespace

std::string validate_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log, const std::string& file)
{
  const Matrix& measured = !log.unidir_p2p_GBps.empty() ? log.unidir_p2p_GBps : log.unidir_nop2p_GBps;
  if (measured.empty())
    throw InputError(file, "", "no GPU-to-GPU bandwidth matrix to validate (expected a p2pBandwidthLatencyTest, "
                               "nvbandwidth or dtsim-bench-link peer matrix)");
  if (measured.size() > static_cast<std::size_t>(topology.gpus_per_node))
    throw InputError(file, "", fmt::format("the matrix has {} GPUs, the topology's node {} (expected at most {})",
                                           measured.size(), topology.gpus_per_node, topology.gpus_per_node));
  std::vector<double> errors;
  std::string out = table_for(topology, measured,
                              fmt::format("{}: unidirectional GPU-to-GPU bandwidth, measured vs the route's bottleneck",
                                          log.format),
                              errors);
  out += fmt::format("# median |bandwidth error| over {} GPU pairs: {:.1f}%\n", errors.size(),
                     errors.empty() ? 0.0 : median_of(errors) * 100);
  return out;
}

}  // namespace dtsim::calibration
