// The topology schema, read and validated: what one node looks like and how nodes are joined.
// Field names (JSON):
//   nodes, gpus_per_node, gpu, gpu_forwarding,
//   intra_node { kind: nvswitch | nvlink-mesh | pcie, nvlink_lane_gbytes, nvlink_lanes_per_gpu,
//                nvlink_latency_us, max_gpus, nvlink_pairs: [[gpu, gpu, links], ...], pcie_gen,
//                pcie_lanes, pcie_latency_us, p2p, cpu_sockets, pcie_switches,
//                gpus_per_pcie_switch, cpu_interconnect { gbytes, latency_us } },
//   nic { count_per_node, gbps, latency_us, pcie_gen },
//   fabric { kind: switch | fat-tree | rail-optimized, latency_us, nics_per_leaf, oversubscription }
// plus "base", "description" and "notes" (free text: sources and assumptions).
#pragma once

#include "sim/topology/gpu_spec.hpp"
#include "sim/topology/layered_json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim {

enum class IntraNodeKind { NvSwitch, NvLinkMesh, Pcie };
enum class FabricKind { Switch, FatTree, RailOptimized };

struct NvLinkPair {
  int a = 0;
  int b = 0;
  int lanes = 1;
};

/// The most CPU cores of one node a topology (host.cores) or a runs CSV (host_cores) may give: 8 sockets x 60
/// (Xeon Platinum 8490H) or 2 x 192 (EPYC 9965) are below 512; 4096 leaves room and keeps the shares of a
/// core meaningful.
inline constexpr int kMaxHostCores = 4096;

struct TopologySpec {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 1;
  GpuSpec gpu;
  bool gpu_forwarding = false;

  IntraNodeKind intra_kind = IntraNodeKind::Pcie;
  double nvlink_lane_bandwidth = 0;  ///< bytes/s per lane per direction
  double nvlink_latency = 0;         ///< s
  int nvlink_lanes_per_gpu = 0;      ///< nvswitch: lanes from each GPU into the switch
  int max_gpus = 0;                  ///< nvswitch: GPUs the switch fabric takes
  std::vector<NvLinkPair> nvlink_pairs;  ///< nvlink-mesh (only pairs among the node's GPUs)

  int pcie_gen = 3;
  int pcie_lanes = 16;
  double pcie_latency = 0;
  bool p2p = true;
  int cpu_sockets = 1;
  int pcie_switches = 0;             ///< 0: GPUs on CPU root ports
  int gpus_per_pcie_switch = 0;
  double cpu_link_bandwidth = 0;     ///< socket interconnect, bytes/s per direction
  double cpu_link_latency = 0;

  int host_cores = 0;                ///< physical CPU cores per node (0: not given)
  int host_threads_per_core = 1;     ///< SMT (Hyper-Threading) threads per core
  std::string host_cpu;              ///< e.g. "2 x Xeon E5-2698 v4"
  double host_memory_bandwidth = 0;  ///< bytes/s per socket (0: not given)
  double host_memory_bytes = 0;      ///< DRAM per node, bytes (host.memory_gib; 0: not given)
  double host_turbo_max_ghz = 0;     ///< one core busy (0: not given)
  double host_turbo_all_core_ghz = 0;

  int nics_per_node = 0;
  double nic_bandwidth = 0;          ///< bytes/s per direction
  double nic_latency = 0;
  int nic_pcie_gen = 3;

  FabricKind fabric = FabricKind::Switch;
  double fabric_latency = 0;
  /// NICs on one leaf: a fat-tree's leaves (32 when not given); a rail-optimised fabric's rail
  /// leaves, each taking NIC i of that many nodes (not given: one leaf per rail for all nodes).
  std::optional<int> nics_per_leaf;
  double oversubscription = 1;
};

/// Reads and validates the merged layers. `nodes_override` (from --nodes) replaces "nodes".
TopologySpec read_topology_spec(const LayeredJson& layers, const std::string& name, std::optional<int> nodes_override);

/// Nominal PCIe bandwidth per direction, bytes/s: GT/s x lanes x encoding / 8.
double pcie_bandwidth(int gen, int lanes);

const char* to_string(IntraNodeKind kind);
const char* to_string(FabricKind kind);

}  // namespace dtsim
