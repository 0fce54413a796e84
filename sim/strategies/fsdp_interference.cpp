// See fsdp_interference.hpp.
#include "sim/strategies/fsdp_interference.hpp"

#include <algorithm>
#include <cstddef>

namespace dtsim {

namespace {

/// Two collectives queued at the same moment, one after the other on the stream, seen as one.
InflightCollective one_after_other(const InflightCollective& a, const InflightCollective& b)
{
  return {a.seconds + b.seconds, a.bus_bytes + b.bus_bytes, std::max(a.channels, b.channels)};
}

InflightCollective scaled(InflightCollective c, double w)
{
  c.seconds *= w;
  c.bus_bytes *= w;
  return c;
}

}  // namespace

double FsdpSlowdown::total() const
{
  double t = 0;
  for (double e : forward)
    t += e;
  for (double e : backward)
    t += e;
  return t;
}

FsdpSlowdown fsdp_compute_slowdown(const FsdpComputeSegments& seg, const GpuSpec& gpu, double memory_bound,
                                   double reduce_weight)
{
  const std::size_t n = seg.forward_s.size();
  FsdpSlowdown out;
  out.forward.assign(n, 0.0);
  out.backward.assign(n, 0.0);
  if (n == 0)
    return out;
  const auto at = [](const std::vector<InflightCollective>& v, std::size_t i) {
    return i < v.size() ? v[i] : InflightCollective{0, 0, 1};
  };
  // Forward: at the end of segment j the AllGather for segment j + 2 is queued.
  std::vector<InflightCollective> queued(n);
  for (std::size_t j = 0; j < n; ++j)
    queued[j] = at(seg.gather, j + 2);
  out.forward = backward_slowdown(seg.forward_s, queued, gpu, memory_bound);
  // Backward, in reverse order (k = n - 1 - segment): at the end of k, the ReduceScatter of k and
  // the prefetched AllGather for k + 2.
  std::vector<double> backward(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t s = n - 1 - k;
    backward[k] = seg.backward_s[s];
    const InflightCollective rs = scaled(at(seg.reduce, s), reduce_weight);
    queued[k] = k + 2 < n ? one_after_other(rs, at(seg.gather_backward, s - 2)) : rs;
  }
  const std::vector<double> extra = backward_slowdown(backward, queued, gpu, memory_bound);
  for (std::size_t k = 0; k < n; ++k)
    out.backward[n - 1 - k] = extra[k];
  return out;
}

}  // namespace dtsim
