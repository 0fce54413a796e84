// See optimizer_step.hpp.
#include "sim/strategies/optimizer_step.hpp"

#include <fmt/format.h>

namespace dtsim {

double optimizer_seconds(double params, const MemoryRules& mem, bool half_weights, const GpuSpec& gpu,
                         double extra_bytes, double memory_fraction)
{
  if (!(gpu.memory_bandwidth > 0))
    return 0;
  const double master = 4;  // fp32 weights the optimizer updates
  const double bytes = 2 * (master + mem.optimizer_bytes) + 4 /* fp32 gradient read */ + (half_weights ? 2 : 0);
  return params * (bytes + extra_bytes) / (gpu.memory_bandwidth * memory_fraction);
}

double optimizer_seconds_in_dtype(double params, double element_bytes, double state_bytes, const GpuSpec& gpu)
{
  if (!(gpu.memory_bandwidth > 0))
    return 0;
  const double states = state_bytes * element_bytes / 4;
  // Read weight, gradient and states; write weight and states.
  const double bytes = 2 * (element_bytes + states) + element_bytes;
  return params * bytes / (gpu.memory_bandwidth * kMemoryBoundFraction);
}

std::string optimizer_note(bool added, const std::string& what)
{
  return added ? fmt::format("optimizer step on each rank's {}, memory-bound at {:.0f}% of HBM bandwidth", what,
                             100 * kMemoryBoundFraction)
               : "optimizer step folded into the measured step time";
}

double memory_bound_seconds(double bytes, const GpuSpec& gpu)
{
  return gpu.memory_bandwidth > 0 ? bytes / (gpu.memory_bandwidth * kMemoryBoundFraction) : 0.0;
}

double copy_seconds(double bytes, const GpuSpec& gpu)
{
  return memory_bound_seconds(2 * bytes, gpu);
}

}  // namespace dtsim
