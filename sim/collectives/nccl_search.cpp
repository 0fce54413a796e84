#include "sim/collectives/nccl_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dtsim {

namespace {

/// search.cc's intra-node speed arrays (GB/s), by compute capability.
const std::vector<double>& intra_speeds(int cc)
{
  static const std::vector<double> kSpeeds = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> kSpeedsSm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> kSpeedsSm100 = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
  return cc >= 100 ? kSpeedsSm100 : cc >= 90 ? kSpeedsSm90 : kSpeeds;
}

}  // namespace

NcclRingSearch nccl_nvswitch_ring_search(double total, int cc)
{
  constexpr int kMaxChannels = 32;  // graph->maxChannels = MAXCHANNELS / 2
  const auto& speeds = intra_speeds(cc);
  std::size_t i = 0;
  while (i + 1 < speeds.size() && speeds[i] > total)
    ++i;
  NcclRingSearch best{0, 0};
  for (; i < speeds.size(); ++i) {
    if (best.channels > 0 && speeds[i] / best.bw <= 0.49)
      break;
    const int fits = std::min(kMaxChannels, static_cast<int>(std::floor(total / speeds[i] + 1e-9)));
    if (fits > 0 && fits * speeds[i] > best.channels * best.bw)
      best = {fits, speeds[i]};
    if (best.channels * best.bw >= total)
      break;
  }
  if (best.channels == 0)  // slower than every speed: NCCL's fallback, one ring
    return {1, total};
  const bool dup = best.bw >= 25.0 && !(cc > 80 && best.bw < 50.0 && best.channels > 4);
  if (dup) {
    const int doubled = std::min(2 * best.channels, kMaxChannels);
    best.bw /= (doubled + best.channels - 1) / best.channels;  // DIVUP(dupChannels, nChannels)
    best.channels = doubled;
  }
  return best;
}

NcclNvlsGraph nccl_nvls_graph_search(double total, int ppn, int cc)
{
  constexpr int kMaxNvlsArity = 32;  // NCCL_MAX_NVLS_ARITY
  const auto& speeds = intra_speeds(cc);
  NcclNvlsGraph g;
  g.channels = std::clamp(ppn, 1, kMaxNvlsArity);
  std::size_t i = 0;
  while (i + 1 < speeds.size() && (g.channels + 1) * speeds[i] > total + 1e-9)
    ++i;
  g.bw_intra = speeds[i];
  g.bw_inter = g.bw_intra;
  while (i > 0 && g.bw_inter < 2 * g.bw_intra)
    g.bw_inter = speeds[--i];
  return g;
}

}  // namespace dtsim
