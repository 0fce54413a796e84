// See optimizer_step.hpp.
#include "sim/strategies/optimizer_step.hpp"

namespace dtsim {

double optimizer_seconds(double params, const MemoryRules& mem, bool half_weights, const GpuSpec& gpu)
{
  if (!(gpu.memory_bandwidth > 0))
    return 0;
  const double master = 4;  // fp32 weights the optimizer updates
  const double bytes = 2 * (master + mem.optimizer_bytes) + 4 /* fp32 gradient read */ + (half_weights ? 2 : 0);
  return params * bytes / (gpu.memory_bandwidth * kMemoryBoundFraction);
}

double copy_seconds(double bytes, const GpuSpec& gpu)
{
  return gpu.memory_bandwidth > 0 ? 2 * bytes / (gpu.memory_bandwidth * kMemoryBoundFraction) : 0.0;
}

}  // namespace dtsim
