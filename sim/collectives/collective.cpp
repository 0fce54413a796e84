// Dispatch: pick (algorithm, protocol) as NCCL would, add the start-up latency per rank, expand.
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/expansion.hpp"
#include "sim/collectives/expansion_memo.hpp"

#include <fmt/format.h>

#include <numeric>
#include <stdexcept>

namespace dtsim {

const char* to_string(CollectiveOp op)
{
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Gather: return "gather";
    case CollectiveOp::Scatter: return "scatter";
    case CollectiveOp::AllToAll: return "alltoall";
    case CollectiveOp::SendRecv: return "sendrecv";
  }
  return "?";
}

TaskCategory category_of(CollectiveOp op)
{
  switch (op) {
    case CollectiveOp::AllReduce: return TaskCategory::AllReduce;
    case CollectiveOp::AllGather: return TaskCategory::AllGather;
    case CollectiveOp::ReduceScatter: return TaskCategory::ReduceScatter;
    case CollectiveOp::Broadcast: return TaskCategory::Broadcast;
    case CollectiveOp::Reduce: return TaskCategory::Reduce;
    case CollectiveOp::Gather: return TaskCategory::Gather;
    case CollectiveOp::Scatter: return TaskCategory::Scatter;
    case CollectiveOp::AllToAll: return TaskCategory::AllToAll;
    case CollectiveOp::SendRecv: return TaskCategory::SendRecv;
  }
  return TaskCategory::None;
}

namespace {

bool is_direct(CollectiveOp op)
{
  return op == CollectiveOp::AllToAll || op == CollectiveOp::SendRecv || op == CollectiveOp::Gather ||
         op == CollectiveOp::Scatter;
}

/// Payload bus bandwidth (bytes/s) the rings reach over the links: per GPU, the NVLink (or PCIe)
/// injection at NCCL's efficiency, and across nodes the node's NICs shared by its GPUs.
double ring_bus_bandwidth(const Topology& t, const CommLayout& layout, const NcclParams& p)
{
  const int gpu = layout.ranks[0];
  double nvlink = 0, pcie = 0;
  for (int l : t.links_of(gpu)) {
    if (t.link(l).kind == LinkKind::NvLink)
      nvlink += t.link(l).bandwidth;
    else if (t.link(l).kind == LinkKind::Pcie)
      pcie = std::max(pcie, t.link(l).bandwidth);
  }
  double bus = layout.nvlink ? nvlink * p.nvlink_efficiency
                             : pcie * (layout.ranks.size() > 1 ? route_efficiency(t, gpu, layout.ranks[1], p) : 1.0);
  // Across nodes, a communicator's rings leave each node through the NICs of its own GPUs there
  // (Expansion::nic_of: one per GPU), not through every NIC of the node: one GPU per node (a
  // data-parallel group of a tensor-parallel layout) sends over one NIC.
  if (layout.by_node.size() > 1 && layout.nics_per_node > 0)
    bus = std::min(bus, std::min(layout.nics_per_node, std::max(1, layout.ppn)) * layout.nic_bandwidth * p.network_efficiency);
  return bus;
}

}  // namespace

NcclLatencyParts collective_latency_parts(const NcclSystem& system, CollectiveOp op, const NcclCost& cost)
{
  NcclLatencyParts parts;
  if (is_direct(op)) {
    parts.base = nccl_base_latency_us(NcclAlgo::Ring, NcclProto::Simple);
    if (system.nodes > 1)
      parts.inter = nccl_hw_latency_us(NcclHw::Net, NcclAlgo::Ring, NcclProto::Simple);
    else
      parts.intra = nccl_hw_latency_us(system.intra_hw, NcclAlgo::Ring, NcclProto::Simple);
    return parts;
  }
  if (const auto p = nccl_latency_parts(op, cost.algo, cost.proto, system))
    parts = *p;
  // nccl_cost's multi-node Ring/Simple factor scales the whole latency.
  const double f = parts.total() > 0 ? cost.latency_us / parts.total() : 1.0;
  parts.base *= f;
  parts.intra *= f;
  parts.inter *= f;
  return parts;
}

double collective_startup_us(const NcclLatencyParts& parts, const NcclCost& cost, const NcclParams& p,
                             int gpus_per_thread)
{
  return p.launch_overhead_us * std::max(1, gpus_per_thread) + parts.base +
         p.hop_scale(static_cast<int>(cost.algo), static_cast<int>(cost.proto)) * parts.intra +
         p.net_hop_scale(static_cast<int>(cost.proto)) * parts.inter;
}

NcclCost choose_collective_algorithm(const Topology& topology, const CollectiveCall& call, const NcclFilter& filter)
{
  const CommLayout layout = make_comm_layout(topology, call.ranks);
  if (is_direct(call.op)) {
    NcclCost c;
    c.algo = NcclAlgo::Ring;
    c.proto = NcclProto::Simple;
    return c;
  }
  return nccl_choose(call.op, layout.system, call.bytes, filter);
}

CollectiveTasks add_collective(TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after)
{
  return add_collective(graph, topology, call, start_after, CollectiveOptions{});
}

CollectiveTasks add_collective(TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after, const CollectiveOptions& options)
{
  if (call.ranks.empty())
    throw std::logic_error("collective with no ranks");
  if (start_after.size() != call.ranks.size())
    throw std::logic_error("collective: one start_after list per rank expected");
  const int n = static_cast<int>(call.ranks.size());
  CollectiveTasks out;
  if (n == 1) {
    out.done.push_back(graph.add_delay(call.ranks[0], 0.0, call.label + " (1 rank)", call.category, start_after[0]));
    out.algorithm = "none";
    return out;
  }
  std::optional<ExpansionKey> key;
  if (options.memo) {
    key = ExpansionMemo::key_of(graph, topology, call, options);
    if (auto copy = options.memo->append_copy(graph, *key, start_after)) {
      if (options.on_collective)
        options.on_collective(graph, static_cast<int>(graph.collectives().size()) - 1, false);
      return *copy;
    }
  }
  CommLayout layout = make_comm_layout(topology, call.ranks);
  NcclParams params = options.params ? *options.params : NcclParams::defaults(layout.system.compute_capability);
  NcclCost cost;
  if (options.ideal) {
    layout.rings.assign(1, std::vector<int>(static_cast<std::size_t>(n)));
    std::iota(layout.rings[0].begin(), layout.rings[0].end(), 0);
    layout.channel_paths = layout.rings;
    params.nvlink_efficiency = params.pcie_efficiency = params.pcie_shm_efficiency = params.network_efficiency = 1.0;
    // The textbook tree (one chain per node, binary tree across nodes) when asked for; else the ring.
    const bool tree = call.op == CollectiveOp::AllReduce && options.filter.algos.size() == 1 &&
                      options.filter.algos[0] == NcclAlgo::Tree;
    cost.algo = tree ? NcclAlgo::Tree : NcclAlgo::Ring;
    cost.proto = NcclProto::Simple;
  } else if (is_direct(call.op)) {
    cost.algo = NcclAlgo::Ring;
    cost.proto = NcclProto::Simple;
  } else {
    cost = nccl_choose(call.op, layout.system, call.bytes, options.filter);
  }
  Expansion x(graph, topology, call, layout, params, cost.algo, cost.proto);
  x.merge_ring_steps = !options.ideal;
  x.charges_hop_latency = !options.ideal;
  if (!options.ideal && cost.algo == NcclAlgo::Ring && cost.proto != NcclProto::Simple) {
    // LL and LL128 are limited by flag polling, not by the links: NCCL caps their bus bandwidth
    // (llMaxBws, perChMaxRingLL128Bws). Where the cap is below what the links would give, the
    // payload fraction is lowered so that an uncontended ring runs at the cap.
    const double cap = nccl_protocol_cap_gbps(cost.proto, layout.system) * 1e9;
    const double links = ring_bus_bandwidth(topology, layout, params);
    if (cap > 0 && links > 0)
      x.protocol_factor = std::min(x.protocol_factor, cap / links);
  }
  if (!options.ideal)
    x.protocol_factor *= params.protocol_rate_scale(static_cast<int>(cost.proto));
  const int first_task = graph.size();
  const double latency = options.ideal ? 0.0 : collective_startup_us(collective_latency_parts(layout.system, call.op, cost), cost, params,
                                                                        options.gpus_per_thread) * 1e-6;
  for (int r = 0; r < n; ++r)
    x.start.push_back(graph.add_delay(call.ranks[static_cast<std::size_t>(r)], latency,
                                      fmt::format("{} {} {}/{} start-up", call.label, to_string(call.op),
                                                  to_string(cost.algo), to_string(cost.proto)),
                                      call.category, start_after[static_cast<std::size_t>(r)]));
  if (is_direct(call.op)) {
    out.done = expand_direct(x);
  } else if (call.op == CollectiveOp::Broadcast || call.op == CollectiveOp::Reduce) {
    out.done = expand_ring_chain(x);
  } else if (cost.algo == NcclAlgo::Tree && call.op == CollectiveOp::AllReduce) {
    const int first = graph.size();
    out.done = expand_tree_allreduce(x);
    // Tree LL and LL128 move at the pace NCCL's model gives them (busBw/3.8 and llMaxBw for LL,
    // 120/128 and perChMaxTreeLL128Bw for LL128, times its measured per-size tree correction),
    // not at the links' rate.
    if (!options.ideal && cost.proto != NcclProto::Simple && cost.alg_bw > 0)
      pace_transfers(graph, topology, first,
                     call.bytes / (cost.alg_bw * 1e9 * params.protocol_rate_scale(static_cast<int>(cost.proto))));
  } else if ((cost.algo == NcclAlgo::Nvls || cost.algo == NcclAlgo::NvlsTree) && call.op == CollectiveOp::AllReduce &&
             layout.nvswitch) {
    out.done = expand_nvls_allreduce(x);
  } else {
    out.done = expand_ring(x);
  }
  graph.mark_collective(first_task, out.done);
  out.algorithm = fmt::format("{}/{}", to_string(cost.algo), to_string(cost.proto));
  out.predicted_us = cost.time_us;
  out.channels = std::max(1, cost.channels);
  if (key)
    options.memo->remember(graph, std::move(*key), first_task, start_after, out);
  if (options.on_collective)
    options.on_collective(graph, static_cast<int>(graph.collectives().size()) - 1, true);
  return out;
}

}  // namespace dtsim
