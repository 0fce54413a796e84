#include "sim/collectives/nccl_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dtsim {

NcclRingSearch nccl_nvswitch_ring_search(double total, int cc)
{
  // search.cc's intra-node speed arrays (GB/s), by compute capability.
  static const std::vector<double> kSpeeds = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> kSpeedsSm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> kSpeedsSm100 = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
  constexpr int kMaxChannels = 32;  // graph->maxChannels = MAXCHANNELS / 2
  const auto& speeds = cc >= 100 ? kSpeedsSm100 : cc >= 90 ? kSpeedsSm90 : kSpeeds;
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

}  // namespace dtsim
