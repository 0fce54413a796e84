// NCCL's analytic cost model (src/graph/tuning.cc, NCCL 2.30): per (algorithm, protocol) a latency
// (base + per-hop hardware latencies) and a bandwidth (channels x per-channel bandwidth, protocol
// factors, architecture caps); time = latency + bytes / algorithm bandwidth; NCCL runs the
// cheapest pair. dtsim uses it to pick (algorithm, protocol, channels) as NCCL would, and as the
// closed-form cross-check of the simulated collectives. Facts: shared/reference/
// nccl-and-pytorch-model.md section 1.
#pragma once

#include "sim/collectives/collective.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

enum class NcclAlgo { Tree = 0, Ring = 1, CollNetDirect = 2, CollNetChain = 3, Nvls = 4, NvlsTree = 5, Pat = 6 };
enum class NcclProto { LL = 0, LL128 = 1, Simple = 2 };
enum class NcclHw { NvLink = 0, Pci = 1, Net = 2 };

constexpr int kNcclAlgos = 7;
constexpr int kNcclProtos = 3;

const char* to_string(NcclAlgo algo);
const char* to_string(NcclProto proto);
/// Parses NCCL_ALGO / NCCL_PROTO style names (case-insensitive: "ring", "tree", "nvls", "nvlstree",
/// "pat", "ll", "ll128", "simple"); nullopt when unknown.
std::optional<NcclAlgo> parse_nccl_algo(const std::string& name);
std::optional<NcclProto> parse_nccl_proto(const std::string& name);
/// Parses an (algorithm, protocol) class as dtsim prints it, "Ring/LL128"; nullopt when either
/// part is unknown or the slash is missing.
std::optional<std::pair<NcclAlgo, NcclProto>> parse_nccl_class(const std::string& name);

/// What NCCL's topology search reports about a communicator (the inputs of tuning.cc).
struct NcclSystem {
  int ranks = 1;
  int nodes = 1;
  int compute_capability = 70;
  NcclHw intra_hw = NcclHw::NvLink;  ///< NVLINK when the rings use NVLink inside a node, else PCI
  int channels = 1;                  ///< ring/tree graph channels (the search result)
  double bw_intra = 0;               ///< GB/s per channel inside a node
  double bw_inter = 0;               ///< GB/s per channel across nodes
  /// GB/s per channel inside a node of the tree graph: search.cc's second pass raises a tree's
  /// bwIntra up to twice its bwInter ("increase bwIntra for trees (2 nodes or collnet)"), where a
  /// ring's stays equal to bwInter; tuning.cc reads bwIntra on 2 nodes or fewer.
  double tree_bw_intra = 0;
  bool nvls = false;                 ///< NVLink SHARP available (NVSwitch gen 3, Hopper+)
  int nvls_channels = 16;            ///< CTAs NVLS runs on (nvls.cc: 16 on SM90; SM100 24 on one node, 32 on more)
  int nvls_graph_channels = 16;      ///< the NVLS graph's channels tuning.cc multiplies (one per GPU on one node)
  double nvls_bw_intra = 0;          ///< GB/s per NVLS graph channel inside a node
  double nvls_bw_inter = 0;          ///< the NVLS graph's bwInter (one node: its own search; several: the ring's bw_inter)
  bool ll128 = true;                 ///< LL128 enabled by NCCL's safety rule
  bool amd_cpu = false;              ///< selects the llMaxBws row for multi-node
  double net_overhead_us = 1.0;      ///< NCCL_NET_OVERHEAD
  double latency_inter_us = 0;       ///< the network plugin's latency
  int ppn() const { return ranks / std::max(nodes, 1); }
};

/// The user's NCCL_ALGO / NCCL_PROTO restriction (empty: all allowed).
struct NcclFilter {
  std::vector<NcclAlgo> algos;
  std::vector<NcclProto> protos;
  std::string source;   ///< where it was set ("command line", a log), for the refusal when nothing remains
  std::string setting;  ///< as set ("NCCL_ALGO=nvls"), for the same refusal
  bool allows(NcclAlgo a) const;
  bool allows(NcclProto p) const;
};

struct NcclCost {
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double latency_us = 0;
  double bus_bw = 0;   ///< GB/s
  double alg_bw = 0;   ///< GB/s, after tree correction
  double time_us = 0;  ///< latency_us + bytes / (1000 alg_bw)
  int channels = 1;    ///< channels this operation would run on (enqueue.cc)
};

/// tuning.cc's latency of one operation split as NCCL builds it (us): the base latency, the
/// intra-node hops (NVLink/PCI hwLat; Ring: (nsteps - nInterSteps) x max(intraLat, netOverhead),
/// Tree: 2 (ppn - 1) intraLat, NVLS/NVLSTree: intraLat) and the inter-node hops (NET hwLat:
/// Ring nInterSteps x interLat, Tree 2 log2(nNodes) interLat, NVLSTree 2 log2(nNodes) interLat).
struct NcclLatencyParts {
  double base = 0, intra = 0, inter = 0;
  double total() const { return base + intra + inter; }
};
std::optional<NcclLatencyParts> nccl_latency_parts(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s);
/// Latency (us) of one operation (the sum of its parts); nullopt when the pair is not available for `op`.
std::optional<double> nccl_latency_us(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s);
/// Bus bandwidth (GB/s) of the pair, before the bus->algorithm conversion; 0 when unavailable.
double nccl_bus_bw(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s);
/// Algorithm bandwidth (GB/s): bus bandwidth x nRanks/nsteps (Ring, NVLS) or /2 (Tree AllReduce).
double nccl_alg_bw(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s);
/// Predicted time of an operation on `bytes` (NCCL's nBytes: total buffer for AllGather/ReduceScatter).
std::optional<NcclCost> nccl_cost(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s, double bytes);
/// The cheapest allowed pair, scanned in NCCL's index order with strict '<'. Falls back to
/// Ring/Simple when nothing is allowed.
NcclCost nccl_choose(CollectiveOp op, const NcclSystem& s, double bytes, const NcclFilter& filter = {});
/// Channels (one CTA each) a communicator runs its ring and tree operations on: ncclTopoPostset
/// (src/graph/connect.cc) duplicates the search's channels (up to MAXCHANNELS, 64), and on Hopper
/// across nodes doubles them again while fewer than 16 and the ring graph's bwIntra is above 45
/// GB/s. The search's own count (NcclSystem::channels) stays what tuning.cc's bandwidths multiply.
int nccl_comm_channels(const NcclSystem& s);
/// Channels one operation runs on (enqueue.cc: from nccl_comm_channels, drop channels while
/// bytes < nc * threads * threshold).
int nccl_op_channels(NcclAlgo a, NcclProto p, const NcclSystem& s, double bytes);

/// NCCL's per-link NVLink bandwidth used by its topology search (GB/s): SM60 18, SM70 20,
/// SM80 20, SM86 12, SM90 20.6, SM100 40.1 (ncclTopoNVLinkBw: SM87 and SM89 as SM80, below SM60 as SM80).
double nccl_nvlink_bw_per_link(int compute_capability);

}  // namespace dtsim

namespace dtsim {
/// tuning.cc's baseLat and hwLat tables (microseconds).
double nccl_base_latency_us(NcclAlgo a, NcclProto p);
double nccl_hw_latency_us(NcclHw hw, NcclAlgo a, NcclProto p);
/// Ring bus-bandwidth cap of a protocol (GB/s): llMaxBws for LL, nChannels x perChMaxRingLL128Bws
/// for LL128, 0 (none) for Simple.
double nccl_protocol_cap_gbps(NcclProto p, const NcclSystem& s);
}  // namespace dtsim
