// Figures computed on the topology graph for `dtsim topology show` and for other stages:
// the nvidia-smi-style path type between two devices, per-GPU injection bandwidth, and the
// bisection bandwidth (Boost max-flow).
#pragma once

#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim {

/// nvidia-smi topo -m style relation between two devices (GPUs or NICs):
/// "X" (same), "NV#" (direct NVLink, or through an NVSwitch: # = lanes), "PIX" (same PCIe switch),
/// "NODE" (same CPU socket), "SYS" (across the socket interconnect), "NET" (different nodes).
std::string path_type(const Topology& topology, int a, int b);

struct InjectionBandwidth {
  double nvlink = 0;    ///< bytes/s per direction out of one GPU over NVLink
  int nvlink_lanes = 0;
  double pcie = 0;      ///< its PCIe link
  double network = 0;   ///< the node's NIC rate divided by its GPUs
};
/// For the GPU of rank `rank`.
InjectionBandwidth injection_bandwidth(const Topology& topology, int rank);

/// Maximum flow, bytes/s, from the GPUs of ranks [0, n/2) to the GPUs of ranks [n/2, n), with
/// every link direction a capacity and no GPU relaying for others. 0 with fewer than 2 GPUs.
double bisection_bandwidth(const Topology& topology);

/// Maximum flow from one set of GPU ranks to another (same rules).
double max_flow_between(const Topology& topology, const std::vector<int>& from_ranks, const std::vector<int>& to_ranks);

/// The bandwidth NCCL's topology search would assume for a link, bytes/s (NCCL 2.30 topo.h):
/// NVLink lanes x per-lane rate by compute capability (SM60 18, SM70 20, SM80 20, SM86 12,
/// SM90 20.6, SM100 40.1 GB/s); PCIe width x speed / 80 (gen3 x16 12, gen4 24, gen5 48 GB/s);
/// NIC Gb/s / 8; other links at their nominal rate.
double nccl_link_bandwidth(const Topology& topology, const Link& link);

}  // namespace dtsim
