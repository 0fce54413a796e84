// See fsdp_pieces_slowdown.hpp.
#include "sim/strategies/fsdp_pieces_slowdown.hpp"

#include "sim/collectives/collective_options.hpp"
#include "sim/strategies/fsdp_interference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace dtsim {

FsdpPiecesSlowdown slow_pieces_beside_collectives(std::vector<std::vector<StagePiece>>& pieces, const ShardUnits& units,
                                                  const FsdpUnitCollectives& c, const Topology& topology,
                                                  const NcclFilter& filter, double memory_bound)
{
  FsdpPiecesSlowdown out;
  std::map<std::tuple<int, bool, double>, InflightCollective> known;  // units of one size ask once
  const auto inflight = [&](CollectiveOp op, bool backward, double bytes) {
    const auto key = std::make_tuple(static_cast<int>(op), backward, bytes);
    if (const auto it = known.find(key); it != known.end())
      return it->second;
    const std::vector<int>& devices = backward ? c.backward_devices : c.shard_devices;
    const CollectiveCall call{op, devices, bytes, 0, "", TaskCategory::None};
    const NcclCost cost = choose_collective_algorithm(topology, call, filter);
    out.channels = std::max(out.channels, cost.channels);
    const double k = static_cast<double>(devices.size());
    return known[key] = InflightCollective{cost.time_us * 1e-6, (k - 1) / k * bytes, cost.channels};
  };
  const InflightCollective none{0, 0, 1};
  FsdpComputeSegments seg;
  for (std::size_t s = 0; s < units.segments.size(); ++s) {
    const auto u = static_cast<std::size_t>(units.segments[s].unit);
    double f = 0, b = 0;
    for (const auto& p : pieces[s]) {
      f += p.fwd_s;
      b += p.bwd_s + p.recompute_s;
    }
    seg.forward_s.push_back(f);
    seg.backward_s.push_back(b);
    const bool first = c.first_segment[u] == static_cast<int>(s), last = c.last_segment[u] == static_cast<int>(s);
    InflightCollective gather = first ? inflight(CollectiveOp::AllGather, false, c.gather_bytes[u]) : none;
    gather.seconds *= c.gather_weight;  // as fsdp_compute_slowdown weighs the reductions
    gather.bus_bytes *= c.gather_weight;
    seg.gather.push_back(gather);
    seg.gather_backward.push_back(c.gather_backward && u != 0 && last ? inflight(CollectiveOp::AllGather, true, c.gather_bytes[u])
                                                                      : none);
    seg.reduce.push_back(u != 0 && first ? inflight(CollectiveOp::ReduceScatter, false, c.reduce_bytes[u]) : none);
  }
  const FsdpSlowdown slow = fsdp_compute_slowdown(seg, topology.gpu, memory_bound, c.reduce_weight);
  for (std::size_t s = 0; s < pieces.size() && s < seg.forward_s.size(); ++s)
    for (auto& p : pieces[s]) {
      const double f = seg.forward_s[s] > 0 ? 1 + slow.forward[s] / seg.forward_s[s] : 1;
      const double b = seg.backward_s[s] > 0 ? 1 + slow.backward[s] / seg.backward_s[s] : 1;
      p.fwd_s *= f;
      p.bwd_s *= b;
      p.recompute_s *= b;
    }
  out.seconds_per_micro_step = slow.total();
  return out;
}

std::string fsdp_slowdown_note(const GpuSpec& gpu, int channels, double memory_bound, double seconds_per_iteration)
{
  return fmt::format("compute beside the shard group's AllGathers and ReduceScatters: {:.3f} ms longer per iteration (up "
                     "to {} CTA(s), one per channel, of {} SMs; {:.0f} HBM bytes per bus byte; {:.0f}% of the work "
                     "memory-bound by roofline)",
                     seconds_per_iteration * 1e3, channels, gpu.sms, kHbmBytesPerBusByte, 100 * memory_bound);
}

}  // namespace dtsim
