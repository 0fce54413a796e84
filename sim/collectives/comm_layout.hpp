// How a communicator sits on the machine: its ranks grouped by node, the channels (rings with
// their own neighbour order, entering and leaving each node through their own NIC) that NCCL
// would build, and the NcclSystem summary its tuning model reads.
#pragma once

#include "sim/collectives/nccl_params.hpp"
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/topology/topology.hpp"

#include <map>
#include <vector>

namespace dtsim {

struct CommLayout {
  std::vector<int> ranks;                 ///< device indices in rank order
  std::vector<std::vector<int>> by_node;  ///< rank indices per node, in rank order
  std::vector<int> node_of_rank;          ///< index into by_node
  int ppn = 1;                            ///< ranks per node (the smallest node)
  /// Per channel, the path NCCL's search found through a node (graph->intra): every node's ranks
  /// in the same local order, entering at the first. Trees chain through it (their search keeps
  /// one NIC per channel, in and out: search.cc, "Trees are symmetric"), so tree hops between
  /// nodes stay on one rail.
  std::vector<std::vector<int>> channel_paths;
  /// What ring algorithms run on, per channel: a permutation of rank indices (position i sends to
  /// i+1). A path leaves a node through another NIC than it entered by; ncclTopoPostset
  /// (connect.cc, "Alternate rings to avoid crossing rails") swaps each even/odd pair of rings on
  /// odd-numbered nodes, so that every ring enters the next node on the rail it left by. Here an
  /// odd node runs the channel's path backwards, which has the same effect: the ring goes out of
  /// node j and into node j + 1 through the same local position, so the same NIC index, rail and
  /// leaf. (With an odd node count the hop from the last node back to node 0 crosses rails, as in
  /// NCCL.) Channels that would repeat a ring with the same links are merged: `ring_weight` is how
  /// many NCCL channels each ring stands for.
  std::vector<std::vector<int>> rings;
  std::vector<double> ring_weight;
  bool nvlink = false;                    ///< ranks of a node talk over NVLink
  bool nvswitch = false;
  std::vector<int> nvswitch_of_node;      ///< device index per node (-1 when none)
  int nvlink_lanes_per_gpu = 0;
  int nics_per_node = 0;
  double nic_bandwidth = 0;               ///< bytes/s per NIC (nominal)
  NcclSystem system;                      ///< NCCL's view, for the (algorithm, protocol) choice
};

CommLayout make_comm_layout(const Topology& topology, const std::vector<int>& ranks);

/// The efficiency class of the route src -> dst: its slowest link's kind, PCIe through host
/// memory apart from PCIe peer-to-peer.
enum class RouteClass { NvLink, Pcie, PcieShm, Network };
RouteClass route_class(const Topology& topology, int src, int dst);
/// The NcclParams efficiency of a route class.
double class_efficiency(RouteClass c, const NcclParams& params);

/// Payload bytes/s over wire bytes/s on the route src -> dst: the efficiency of the bottleneck
/// link's class (NVLink, PCIe P2P, PCIe through host memory, network); 1 for an empty route.
double route_efficiency(const Topology& topology, int src, int dst, const NcclParams& params);

}  // namespace dtsim
