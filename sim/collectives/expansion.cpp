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
  const Device& from = topology.device(src);
  const Device& to = topology.device(dst);
  if (from.kind == DeviceKind::Gpu && to.kind == DeviceKind::Gpu && from.node != to.node) {
    // NCCL picks the NIC of each channel (the one beside the GPU), not the routing table's first
    // choice. GPUDirect RDMA streams the data through PCIe and the network at once, so the three
    // legs are concurrent flows; the hop is done when all three are.
    const int out = nic_of(src), in = nic_of(dst);
    if (out >= 0 && in >= 0) {
      std::vector<int> legs{one_flow(src, out, payload, what, after, extra_efficiency),
                            one_flow(out, in, payload, what, after, extra_efficiency),
                            one_flow(in, dst, payload, what, after, extra_efficiency)};
      return graph.add_delay(dst, 0.0, call.label.empty() ? what : call.label + " " + what, call.category,
                             std::move(legs));
    }
  }
  return one_flow(src, dst, payload, what, std::move(after), extra_efficiency);
}

int Expansion::one_flow(int src, int dst, double payload, const std::string& what, std::vector<int> after,
                        double extra_efficiency)
{
  auto it = efficiency_.find({src, dst});
  if (it == efficiency_.end())
    it = efficiency_.emplace(std::make_pair(src, dst), route_efficiency(topology, src, dst, params)).first;
  const double wire = payload / (it->second * extra_efficiency * protocol_factor);
  return graph.add_transfer(src, dst, wire, call.label.empty() ? what : call.label + " " + what, call.category,
                            std::move(after));
}

int Expansion::join(int rank, std::vector<int> after, const std::string& what)
{
  return graph.add_delay(device(rank), 0.0, call.label.empty() ? what : call.label + " " + what, call.category,
                         std::move(after));
}

int pipeline_chunks(double bytes, double chunk_bytes, int max_chunks)
{
  return std::clamp(static_cast<int>(std::ceil(bytes / chunk_bytes)), 1, max_chunks);
}

std::vector<double> pipeline_chunk_sizes(double bytes, double chunk_bytes, int max_chunks)
{
  const int m = pipeline_chunks(bytes, chunk_bytes, max_chunks);
  std::vector<double> w(static_cast<std::size_t>(m), 1.0);
  if (m >= 8) {
    // Three small chunks at each end (1/8, 1/4, 1/2): the pipeline fills and drains with 1/8 of a
    // chunk, as NCCL's many small chunks do, without that many flows.
    for (int j = 0; j < 3; ++j) {
      w[static_cast<std::size_t>(j)] = std::ldexp(1.0, j - 3);
      w[static_cast<std::size_t>(m - 1 - j)] = std::ldexp(1.0, j - 3);
    }
  }
  double total = 0;
  for (double v : w)
    total += v;
  for (auto& v : w)
    v *= bytes / total;
  return w;
}

}  // namespace dtsim
