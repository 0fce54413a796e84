// `dtsim validate` for bandwidth logs: each measured GPU-to-GPU bandwidth beside the bandwidth of
// the route between the same two GPUs of node 0 in the (calibrated) topology, and the median
// |error|, so a user sees how well the link model reproduces the measurement it was fitted to.
// A machine that numbers its GPUs differently from the preset gives a GPU order: the log's GPU i
// is the topology's GPU order[i] of node 0.
#pragma once

#include "calibration/bandwidth_logs.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim::calibration {

struct BandwidthValidationRow {
  int src = 0, dst = 0;          ///< GPUs as the log numbers them
  int topology_src = 0, topology_dst = 0;  ///< the topology's GPUs of node 0 they are taken as
  double measured_GBps = 0;
  double predicted_GBps = 0;     ///< the route's bottleneck bandwidth
  double error = 0;              ///< predicted / measured - 1
};

struct BandwidthValidation {
  std::string what;              ///< which matrix of which format
  std::vector<int> gpu_order;    ///< log GPU i -> topology GPU gpu_order[i] of node 0
  std::vector<BandwidthValidationRow> rows;
  double median_abs_error = 0;   ///< over the rows (0 when none)
};

/// Compares; InputError when the log has no GPU-to-GPU matrix, more GPUs than node 0, or a GPU
/// order that is not a permutation of the log's GPUs onto node 0's (empty: the identity).
BandwidthValidation compare_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log,
                                          const std::string& file, std::vector<int> gpu_order = {});

std::string format_bandwidth_validation(const BandwidthValidation& validation);

/// compare_bandwidth_log, formatted.
std::string validate_bandwidth_log(const Topology& topology, const BandwidthMeasurements& log,
                                   const std::string& file, std::vector<int> gpu_order = {});

}  // namespace dtsim::calibration
