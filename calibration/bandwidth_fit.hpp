// Fits link-class parameters to bandwidth measurements: effective per-direction bandwidth and
// latency of NVLink (per lane), PCIe peer-to-peer, and transfers staged through host memory, plus
// host<->device bandwidths. Robust statistics: the median over the cells of a class.
//
// The class of each GPU pair comes, in this order, from
//   1. the caller (FitOptions::classes, e.g. derived from dtsim's topology for the machine),
//   2. the `nvidia-smi topo -m` matrix in the measurements (NV<k> = NVLink with k lanes;
//      PIX/PXB/PHB/NODE/SYS = PCIe peer-to-peer, or through host when peer access is off),
//   3. clustering of the peer-to-peer bandwidths: sorted cells split where one exceeds the previous
//      by more than `cluster_gap`; a cluster is NVLink when its median exceeds `nvlink_over_pcie`
//      times a PCIe reference (median of the P2P=Disabled matrix, else of the pinned
//      host-to-device bandwidth), or `pcie_ceiling_GBps` when there is no reference. With two or
//      more NVLink clusters the smallest is taken as one lane and the others as the nearest integer
//      multiple; with one NVLink cluster the lane count is unknown and only per-pair bandwidth is
//      reported. Pairs without peer access (connectivity 0) are always "host_via_cpu".
#pragma once

#include "calibration/bandwidth_logs.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

enum class LinkClass { NvLink, Pcie, HostViaCpu };
const char* to_string(LinkClass c);

struct PairClass {
  LinkClass link = LinkClass::Pcie;
  int lanes = 0;  ///< NVLink lanes between the pair; 0 = unknown
};
/// [src][dst]; nullopt on the diagonal and where nothing is known.
using PairClasses = std::vector<std::vector<std::optional<PairClass>>>;

struct FitOptions {
  std::optional<PairClasses> classes;
  double cluster_gap = 1.25;
  double nvlink_over_pcie = 1.6;
  double pcie_ceiling_GBps = 64.0;
};

struct Classification {
  PairClasses classes;
  std::string source;  ///< "caller", "topology", "clustering" or "none"
};

Classification classify_pairs(const BandwidthMeasurements& m, const FitOptions& options = {});

/// {"links": {...}, "host_device": {...}, "fit": {...}, "not_measured": [...]}; see README.
nlohmann::json fit_bandwidth(const BandwidthMeasurements& m, const FitOptions& options = {});

/// Combines the runs of one machine read from several files: each quantity is taken from the
/// first run that has it.
BandwidthMeasurements merge_runs(const std::vector<BandwidthMeasurements>& runs);

}  // namespace dtsim::calibration
