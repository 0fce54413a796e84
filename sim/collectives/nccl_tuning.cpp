#include "sim/collectives/nccl_tuning.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace dtsim {

namespace {

// Constant tables of tuning.cc @ v2.30.7-1 (microseconds, GB/s).
constexpr double kBaseLat[kNcclAlgos][kNcclProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
constexpr double kHwLat[3][kNcclAlgos][kNcclProtos] = {
    // NVLINK
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    // PCI
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    // NET
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// Rows: Volta, Ampere, Hopper, Blackwell; columns: 1 node, 2 nodes, >= 3 nodes.
constexpr double kLLMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChRingLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kPerChTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1},
    {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

int arch_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }
int nodes_index(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }
int log2i(long long v)
{
  int r = -1;
  while (v > 0) {
    v >>= 1;
    ++r;
  }
  return r;
}

int nsteps(CollectiveOp op, int n)
{
  switch (op) {
    case CollectiveOp::AllReduce: return 2 * (n - 1);
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter: return n - 1;
    default: return n;
  }
}

bool algo_supports(CollectiveOp op, NcclAlgo a)
{
  switch (op) {
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return a == NcclAlgo::Ring;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter: return a == NcclAlgo::Ring || a == NcclAlgo::Pat || a == NcclAlgo::Nvls;
    case CollectiveOp::AllReduce: return a == NcclAlgo::Ring || a == NcclAlgo::Tree || a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree;
    default: return a == NcclAlgo::Ring;
  }
}

bool available(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s)
{
  if (!algo_supports(op, a))
    return false;
  if ((a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree || a == NcclAlgo::Pat) && p != NcclProto::Simple)
    return false;
  if (a == NcclAlgo::CollNetDirect || a == NcclAlgo::CollNetChain)
    return false;  // no SHARP/CollNet plugin modelled
  if ((a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree) && (!s.nvls || s.nvls_graph_channels < 2))
    return false;
  if (a == NcclAlgo::Nvls && s.nodes > 1)
    return false;  // multi-node NVLS needs CollNet
  if (a == NcclAlgo::NvlsTree && s.nodes <= 1)
    return false;
  if (a == NcclAlgo::Pat && !(s.nodes == s.ranks && s.compute_capability >= 60))
    return false;
  if (a == NcclAlgo::Tree && s.nodes <= 1 && op == CollectiveOp::AllReduce) {
    // Single-node trees exist (a chain) and are priced by the model; keep them.
  }
  if (p == NcclProto::LL128 && !s.ll128)
    return false;
  return true;
}

}  // namespace

const char* to_string(NcclAlgo a)
{
  static const char* names[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  return names[static_cast<int>(a)];
}

const char* to_string(NcclProto p)
{
  static const char* names[] = {"LL", "LL128", "Simple"};
  return names[static_cast<int>(p)];
}

std::optional<NcclAlgo> parse_nccl_algo(const std::string& name)
{
  const std::string n = lower(name);
  for (int i = 0; i < kNcclAlgos; ++i)
    if (lower(to_string(static_cast<NcclAlgo>(i))) == n)
      return static_cast<NcclAlgo>(i);
  return std::nullopt;
}

std::optional<NcclProto> parse_nccl_proto(const std::string& name)
{
  const std::string n = lower(name);
  if (n == "ll")
    return NcclProto::LL;
  if (n == "ll128")
    return NcclProto::LL128;
  if (n == "simple")
    return NcclProto::Simple;
  return std::nullopt;
}

std::optional<std::pair<NcclAlgo, NcclProto>> parse_nccl_class(const std::string& name)
{
  const auto slash = name.find('/');
  if (slash == std::string::npos)
    return std::nullopt;
  const auto a = parse_nccl_algo(name.substr(0, slash));
  const auto p = parse_nccl_proto(name.substr(slash + 1));
  if (!a || !p)
    return std::nullopt;
  return std::pair{*a, *p};
}

bool NcclFilter::allows(NcclAlgo a) const { return algos.empty() || std::find(algos.begin(), algos.end(), a) != algos.end(); }
bool NcclFilter::allows(NcclProto p) const
{
  return protos.empty() || std::find(protos.begin(), protos.end(), p) != protos.end();
}

double nccl_nvlink_bw_per_link(int cc)
{
  // ncclTopoNVLinkBw (src/graph/topo.cc): only SM86 (A30, A40, RTX A6000) gets 12; SM87 and SM89 fall
  // to the SM80 figure, and so does anything older than SM60.
  if (cc >= 100)
    return 40.1;
  if (cc >= 90)
    return 20.6;
  if (cc == 86)
    return 12.0;
  if (cc >= 70)
    return 20.0;
  if (cc >= 60)
    return 18.0;
  return 20.0;
}

double nccl_bus_bw(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s)
{
  if (!available(op, a, p, s))
    return 0;
  const int arch = arch_index(s.compute_capability);
  const int ni = nodes_index(s.nodes);
  const int nc = s.channels;
  const double ll_max = kLLMaxBw[s.nodes > 1 ? (s.amd_cpu ? 1 : 0) : arch][ni];
  const double bw = s.nodes > 2 ? s.bw_inter : a == NcclAlgo::Tree && s.tree_bw_intra > 0 ? s.tree_bw_intra : s.bw_intra;
  double bus = nc * bw;
  if (a == NcclAlgo::Ring) {
    if (p == NcclProto::LL)
      bus = std::min(ll_max, 0.5 * bus);
    else if (p == NcclProto::LL128)
      bus = std::min(0.92 * bus, nc * kPerChRingLL128[arch][ni]);
  } else if (a == NcclAlgo::Tree) {
    bus = std::min(0.92 * bus, nc * kPerChTree[arch][ni]);
    if (p == NcclProto::LL)
      bus = std::min(bus / 3.8, ll_max);
    else if (p == NcclProto::LL128)
      bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nc * kPerChTreeLL128[arch][ni]);
  } else if (a == NcclAlgo::Pat) {
    bus *= 0.75;
  } else if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree) {
    const int nvc = s.nvls_graph_channels;
    double intra = s.nvls_bw_intra * kNvlsEfficiency[arch] * (nvc - 1) / nvc;
    intra *= op == CollectiveOp::AllReduce ? 2.0 : static_cast<double>(s.ppn() - 1) / s.ppn();
    double inter = s.nvls_bw_inter;
    if (a == NcclAlgo::NvlsTree && s.nodes <= 2)
      inter *= 2;
    double b = std::min(intra, inter);
    if (a == NcclAlgo::NvlsTree)
      b = std::min(b, kPerChNvlsTree[arch][ni]);
    bus = nvc * b;
  }
  return bus;
}

double nccl_alg_bw(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s)
{
  const double bus = nccl_bus_bw(op, a, p, s);
  if (bus <= 0)
    return 0;
  if (a == NcclAlgo::Ring || a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree)
    return bus * s.ranks / nsteps(op, s.ranks);
  if (op == CollectiveOp::AllReduce)
    return 0.5 * bus;
  return bus;
}

std::optional<NcclLatencyParts> nccl_latency_parts(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s)
{
  if (!available(op, a, p, s))
    return std::nullopt;
  const int ai = static_cast<int>(a);
  const int pi = static_cast<int>(p);
  const int ppn = s.ppn();
  const double intra = kHwLat[static_cast<int>(s.intra_hw)][ai][pi];
  double inter = kHwLat[2][ppn == 1 ? static_cast<int>(NcclAlgo::Tree) : ai][pi] + s.latency_inter_us;
  if (p == NcclProto::Simple)
    inter += s.latency_inter_us;
  NcclLatencyParts out;
  out.base = kBaseLat[ai][pi];
  const int steps = nsteps(op, s.ranks);
  switch (a) {
    case NcclAlgo::Ring:
      if (op == CollectiveOp::AllReduce || op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter) {
        const int inter_steps = s.nodes == 1 ? 0 : (op == CollectiveOp::AllReduce ? 2 : 1) * (s.nodes - 1);
        double net_overhead = s.nodes == 1 ? 0.0 : s.net_overhead_us;
        if (p == NcclProto::Simple)
          net_overhead *= 3;
        out.intra = (steps - inter_steps) * std::max(intra, net_overhead);
        out.inter = inter_steps * inter;
      } else {
        const int hw = s.nodes > 1 ? 2 : static_cast<int>(s.intra_hw);
        const double hop = kHwLat[hw][p == NcclProto::Simple ? 0 : ai][pi];
        (s.nodes > 1 ? out.inter : out.intra) = steps * hop;  // graph.sameChannels is not assumed
      }
      break;
    case NcclAlgo::Tree:
      out.intra = 2 * (ppn - 1) * intra;
      out.inter = 2 * log2i(s.nodes) * inter;
      break;
    case NcclAlgo::Nvls:
      out.base = 0;
      out.intra = intra;
      out.inter = s.nodes > 1 ? inter : 0.0;
      break;
    case NcclAlgo::NvlsTree:
      out.base = 0;
      out.intra = intra;
      out.inter = 2 * log2i(s.nodes) * inter;
      break;
    case NcclAlgo::Pat:
      out.intra = s.ranks * 2.8;
      out.inter = log2i(s.nodes) * inter / 3.5;
      break;
    default: break;
  }
  return out;
}

std::optional<double> nccl_latency_us(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s)
{
  const auto parts = nccl_latency_parts(op, a, p, s);
  if (!parts)
    return std::nullopt;
  return parts->total();
}

int nccl_comm_channels(const NcclSystem& s)
{
  // MAXCHANNELS of the NCCL this file follows (src/include/device.h: 64; 32 in older releases).
  // A search finds at most 32 rings (nccl_nvswitch_ring_search), so twice that reaches the cap.
  constexpr int kMaxChannels = 64;
  const int search = std::max(1, s.channels);
  // "Duplication should be complete now": every ring and tree channel is run twice.
  int nc = std::min(kMaxChannels, 2 * search);
  // "Use 4 compute channels per search channel to reach peak BW on <8 PPN".
  if (s.compute_capability >= 90 && s.nodes > 1 && s.bw_intra > 45.0 && nc < 16)
    nc = std::min(kMaxChannels, 2 * nc);
  return nc;
}

int nccl_op_channels(NcclAlgo a, NcclProto p, const NcclSystem& s, double bytes)
{
  if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree)
    return s.nvls_channels;
  int nc = nccl_comm_channels(s);
  int nt = p == NcclProto::LL128 ? 640 : 512;
  if (a == NcclAlgo::Tree || a == NcclAlgo::Pat)
    nt = 640;
  double threshold = p == NcclProto::LL ? 8.0 : p == NcclProto::LL128 ? 8.0 : 64.0;
  if (a == NcclAlgo::Ring && p == NcclProto::LL)
    threshold *= s.ranks;
  while (nc > 1 && bytes < nc * nt * threshold)
    --nc;
  return nc;
}

std::optional<NcclCost> nccl_cost(CollectiveOp op, NcclAlgo a, NcclProto p, const NcclSystem& s, double bytes)
{
  const auto lat = nccl_latency_us(op, a, p, s);
  double alg = nccl_alg_bw(op, a, p, s);
  if (!lat || alg <= 0)
    return std::nullopt;
  NcclCost c;
  c.algo = a;
  c.proto = p;
  c.bus_bw = nccl_bus_bw(op, a, p, s);
  double latency = *lat;
  if (a == NcclAlgo::Tree && op == CollectiveOp::AllReduce) {
    const int log_size = log2i(static_cast<long long>(bytes) >> 6);
    if (log_size >= 0 && log_size < 23)
      alg *= kTreeCorrection[static_cast<std::size_t>(p)][static_cast<std::size_t>(log_size)];
  }
  if (a == NcclAlgo::Ring && p == NcclProto::Simple && op == CollectiveOp::AllReduce && s.nodes > 1 &&
      bytes / (s.channels * s.ranks) >= 64)
    latency *= s.compute_capability < 80 ? 1.9 : 1.4;
  c.alg_bw = alg;
  c.latency_us = latency;
  c.time_us = latency + bytes / (1000.0 * alg);
  c.channels = nccl_op_channels(a, p, s, bytes);
  return c;
}

NcclCost nccl_choose(CollectiveOp op, const NcclSystem& system, double bytes, const NcclFilter& filter)
{
  // An NCCL_PROTO that allows LL128 enables it outright: parseList sets each protocol to 0 or 1, and only
  // LL128's default (2) goes through the safety rule (src/graph/tuning.cc ncclTopoTuneModel, protoEnable).
  NcclSystem s = system;
  if (!filter.protos.empty() && filter.allows(NcclProto::LL128))
    s.ll128 = true;
  std::optional<NcclCost> best;
  for (int ai = 0; ai < kNcclAlgos; ++ai) {
    const auto a = static_cast<NcclAlgo>(ai);
    if (!filter.allows(a))
      continue;
    for (int pi = 0; pi < kNcclProtos; ++pi) {
      const auto p = static_cast<NcclProto>(pi);
      if (!filter.allows(p))
        continue;
      const auto c = nccl_cost(op, a, p, s, bytes);
      if (c && (!best || c->time_us < best->time_us))
        best = c;
    }
  }
  if (!best && (!filter.algos.empty() || !filter.protos.empty())) {
    // NCCL (src/enqueue.cc topoGetAlgoInfo) finds no algorithm/protocol in its cost table and fails the
    // call: "No algorithm/protocol available for function ... NCCL_ALGO was set to ...", ncclInvalidUsage
    // when NCCL_ALGO or NCCL_PROTO is set. A user's choice that leaves nothing is refused, never replaced.
    throw InputError(filter.source.empty() ? "command line" : filter.source, "",
                     fmt::format("{} leaves no algorithm/protocol that runs {} on this topology (NCCL fails such a call: "
                                 "\"No algorithm/protocol available\", ncclInvalidUsage; expected a setting that keeps "
                                 "one available, e.g. Ring)",
                                 filter.setting.empty() ? "NCCL_ALGO / NCCL_PROTO" : filter.setting, to_string(op)));
  }
  if (!best) {
    NcclSystem relaxed = s;
    relaxed.ll128 = true;
    best = nccl_cost(op, NcclAlgo::Ring, NcclProto::Simple, relaxed, bytes);
  }
  if (!best) {
    NcclCost c;
    c.time_us = 0;
    return c;
  }
  return *best;
}

}  // namespace dtsim

namespace dtsim {
double nccl_base_latency_us(NcclAlgo a, NcclProto p) { return kBaseLat[static_cast<int>(a)][static_cast<int>(p)]; }
double nccl_hw_latency_us(NcclHw hw, NcclAlgo a, NcclProto p)
{
  return kHwLat[static_cast<int>(hw)][static_cast<int>(a)][static_cast<int>(p)];
}
}  // namespace dtsim

namespace dtsim {
double nccl_protocol_cap_gbps(NcclProto p, const NcclSystem& s)
{
  const int arch = arch_index(s.compute_capability);
  const int ni = nodes_index(s.nodes);
  if (p == NcclProto::LL)
    return kLLMaxBw[s.nodes > 1 ? (s.amd_cpu ? 1 : 0) : arch][ni];
  if (p == NcclProto::LL128)
    return s.channels * kPerChRingLL128[arch][ni];
  return 0;
}
}  // namespace dtsim
