#include "sim/collectives/expansion.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

namespace {
double protocol_efficiency(NcclProto p)
{
  switch (p) {
    case NcclProto::LL: return 0.5;       // 8 data bytes per 16-byte line
    case NcclProto::LL128: return 0.92;   // 120 of 128 bytes, tuning.cc's 0.92
    case NcclProto::Simple: return 1.0;
  }
  return 1.0;
}
}  // namespace

Expansion::Expansion(TaskGraph& g, const Topology& t, const CollectiveCall& c, const CommLayout& l, const NcclParams& p,
                     NcclAlgo a, NcclProto pr)
    : graph(g), topology(t), call(c), layout(l), params(p), algo(a), proto(pr)
{
}

int Expansion::transfer(int src, int dst, double payload, const std::string& what, std::vector<int> after,
                        double extra_efficiency)
{
  auto it = efficiency_.find({src, dst});
  if (it == efficiency_.end())
    it = efficiency_.emplace(std::make_pair(src, dst), route_efficiency(topology, src, dst, params)).first;
  const double wire = payload / (it->second * extra_efficiency * protocol_efficiency(proto));
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

}  // namespace dtsim
