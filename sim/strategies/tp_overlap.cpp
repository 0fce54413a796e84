// See tp_overlap.hpp.
#include "sim/strategies/tp_overlap.hpp"

#include "sim/collectives/collective_options.hpp"
#include "sim/strategies/interference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace dtsim {

TpOverlapSlowdown slow_gemms_beside_tp(std::vector<StagePiece>& pieces, const std::vector<int>& tp_devices,
                                       const Topology& topology, const NcclFilter& filter)
{
  TpOverlapSlowdown out;
  std::map<std::pair<int, double>, InflightCollective> known;  // a stage's layers ask the same few
  const auto inflight = [&](const TpCollective& c) {
    const auto key = std::make_pair(static_cast<int>(c.op), c.bytes);
    if (const auto it = known.find(key); it != known.end())
      return it->second;
    const CollectiveCall call{c.op, tp_devices, c.bytes, 0, "", TaskCategory::None};
    const NcclCost cost = choose_collective_algorithm(topology, call, filter);
    out.channels = std::max(out.channels, cost.channels);
    const double k = static_cast<double>(tp_devices.size());
    const double bus = (c.op == CollectiveOp::AllReduce ? 2 : 1) * (k - 1) / k * c.bytes;
    return known[key] = InflightCollective{cost.time_us * 1e-6, bus, cost.channels};
  };
  for (auto& piece : pieces)
    for (auto& b : piece.beside) {
      const InflightCollective c = inflight(b.collective);
      const double loss = compute_loss(c, topology.gpu, 0.0);  // GEMMs: compute-bound
      if (!(loss > 0) || !(b.compute_s > 0))
        continue;
      const double extra = std::min(c.seconds * loss, b.compute_s * loss / (1 - loss));
      b.compute_s += extra;
      piece.bwd_s += extra;
      out.seconds_per_micro_batch += extra;
    }
  return out;
}

std::string tp_overlap_note(bool sequence_parallel, const GpuSpec& gpu, int channels, double seconds_per_iteration)
{
  return fmt::format("backward tensor-parallel collectives overlapped as Megatron issues them ({}); the GEMMs beside "
                     "them {:.3f} ms longer per iteration on the busiest stage (up to {} CTA(s), one per channel, of {} "
                     "SMs)",
                     sequence_parallel ? "each column-parallel linear's input AllGather beside its input-gradient GEMM "
                                         "and its gradient's ReduceScatter beside its weight-gradient GEMM"
                                       : "each column-parallel linear's input-gradient AllReduce beside its "
                                         "weight-gradient GEMM",
                     seconds_per_iteration * 1e3, channels, gpu.sms);
}

}  // namespace dtsim
