#include "sim/collectives/expansion.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

double protocol_efficiency(NcclProto p)
{
  switch (p) {
    case NcclProto::LL: return 0.5;       // 8 data bytes per 16-byte line
    case NcclProto::LL128: return 0.92;   // 120 of 128 bytes, tuning.cc's 0.92
    case NcclProto::Simple: return 1.0;
  }
  return 1.0;
}

Expansion::Expansion(TaskGraph& g, const Topology& t, const CollectiveCall& c, const CommLayout& l, const NcclParams& p,
                     NcclAlgo a, NcclProto pr)
    : graph(g), topology(t), call(c), layout(l), params(p), algo(a), proto(pr), protocol_factor(protocol_efficiency(pr))
{
  for (std::size_t r = 0; r < c.ranks.size(); ++r)
    rank_of_device_.emplace(c.ranks[r], static_cast<int>(r));
}

int Expansion::nic_of(int gpu) const
{
  const Device& d = topology.device(gpu);
  const auto nics = topology.nics_of_node(d.node);
  if (nics.empty())
    return -1;
  const int per_node = std::max(1, topology.gpus_per_node);
  const auto index = static_cast<std::size_t>(d.local_index * static_cast<int>(nics.size()) / per_node) % nics.size();
  return nics[index];
}

int Expansion::transfer(int src, int dst, double payload, const std::string& what, std::vector<int> after,
                        double extra_efficiency)
{
  const int joined = sender_join(src);
  const TaskText name = name_of(what);  // one look-up for all legs
  const Device& from = topology.device(src);
  const Device& to = topology.device(dst);
  if (from.kind == DeviceKind::Gpu && to.kind == DeviceKind::Gpu && from.node != to.node) {
    // NCCL picks the NIC of each channel (the one beside the GPU), not the routing table's first
    // choice. GPUDirect RDMA streams the data through PCIe and the network at once, so the three
    // legs are concurrent flows; the hop is done when all three are.
    const int out = nic_of(src), in = nic_of(dst);
    if (out >= 0 && in >= 0) {
      const std::vector<int> legs{one_flow(src, out, payload, name, after, extra_efficiency, joined),
                                  one_flow(out, in, payload, name, after, extra_efficiency, joined),
                                  one_flow(in, dst, payload, name, after, extra_efficiency, joined)};
      return graph.add_delay(dst, 0.0, name, call.category, legs);
    }
  }
  return one_flow(src, dst, payload, name, after, extra_efficiency, joined);
}

int Expansion::sender_join(int device) const
{
  const auto it = rank_of_device_.find(device);
  if (it == rank_of_device_.end() || static_cast<std::size_t>(it->second) >= start.size())
    return -1;
  return start[static_cast<std::size_t>(it->second)];  // not a rank (an NVSwitch multicasting): it sends what every rank has joined
}

int Expansion::one_flow(int src, int dst, double payload, const TaskText& name, const std::vector<int>& after,
                        double extra_efficiency, int sender_joined)
{
  // A stream's transfers, and a hop's legs' neighbours, ask for one pair after the other.
  if (efficiency_.src != src || efficiency_.dst != dst)
    efficiency_ = {src, dst, route_efficiency(topology, src, dst, params)};
  const double wire = payload / (efficiency_.of * extra_efficiency * protocol_factor);
  const int id = graph.add_transfer(src, dst, wire, name, call.category, after);
  // NCCL's per-hop latency (the start-up) already includes the wire's.
  graph[id].link_latency = !charges_hop_latency;
  graph[id].sender_joined = sender_joined;
  return id;
}

int Expansion::join(int rank, std::vector<int> after, const std::string& what)
{
  return graph.add_delay(device(rank), 0.0, name_of(what), call.category, after);
}

TaskText Expansion::name_of(const std::string& what)
{
  if (const auto it = names_.find(what); it != names_.end())
    return it->second;
  const TaskText name(call.label.empty() ? what : call.label + " " + what);
  if (names_.size() < kNamesKept)  // past it, names that do not repeat (a chain's hops): not kept
    names_.emplace(what, name);
  return name;
}

void pace_transfers(TaskGraph& graph, const Topology& topology, int first, double seconds)
{
  std::vector<double> load(2 * topology.links().size(), 0.0);  // per directed link (2 * link + forward): wire bytes
  for (int id = first; id < graph.size(); ++id) {
    const Task& t = graph[id];
    if (t.kind != TaskKind::Transfer || t.src == t.dst)
      continue;
    for (const Hop& hop : topology.route(t.src, t.dst))
      load[static_cast<std::size_t>(directed_link(hop))] += t.bytes;
  }
  double busiest = 0;
  for (std::size_t key = 0; key < load.size(); ++key)
    if (load[key] > 0)
      busiest = std::max(busiest, load[key] / topology.link(static_cast<int>(key / 2)).bandwidth);
  if (busiest <= 0 || busiest >= seconds)
    return;
  const double stretch = seconds / busiest;
  for (int id = first; id < graph.size(); ++id)
    if (graph[id].kind == TaskKind::Transfer)
      graph[id].bytes *= stretch;
}

double nccl_chunk_bytes(NcclAlgo algo, NcclProto proto)
{
  switch (proto) {
    case NcclProto::LL: return 32.0 * 1024;
    case NcclProto::LL128: return 576000.0;
    case NcclProto::Simple: break;
  }
  return algo == NcclAlgo::Nvls || algo == NcclAlgo::NvlsTree ? 128.0 * 1024 : 512.0 * 1024;
}

double stream_chunk(double payload, double per_channel_chunk, double channels)
{
  return std::min(kNcclSteps * per_channel_chunk * std::max(1.0, channels), payload / 8);
}

double pipeline_chunk(NcclAlgo algo, NcclProto proto, double payload, double channels)
{
  if (proto != NcclProto::Simple)
    return payload / kLineGrainChunks;
  return stream_chunk(payload, nccl_chunk_bytes(algo, proto), channels);
}

Expansion::Stream Expansion::stream(int src, int dst, double payload, double chunk, std::vector<int> head_after,
                                    std::vector<int> tail_after, const std::string& what, double extra_efficiency)
{
  chunk = std::min(chunk, payload / 2);
  Stream s;
  s.head = transfer(src, dst, chunk, what + " (first chunk)", std::move(head_after), extra_efficiency);
  int before_tail = s.head;
  if (payload - 2 * chunk > 0)
    before_tail = transfer(src, dst, payload - 2 * chunk, what, {s.head}, extra_efficiency);
  tail_after.push_back(before_tail);
  s.tail = transfer(src, dst, chunk, what + " (last chunk)", std::move(tail_after), extra_efficiency);
  return s;
}

Expansion::Stream Expansion::join(int rank, const std::vector<Stream>& streams, const std::string& what)
{
  std::vector<int> heads, tails;
  for (const auto& s : streams) {
    heads.push_back(s.head);
    tails.push_back(s.tail);
  }
  return {join(rank, std::move(heads), what + " (first chunk)"), join(rank, std::move(tails), what)};
}

}  // namespace dtsim
