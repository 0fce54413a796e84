#include "sim/strategies/attention_rate.hpp"

#include <fmt/format.h>

namespace dtsim {

const char* to_string(FusedAttentionKernel kernel)
{
  switch (kernel) {
    case FusedAttentionKernel::Auto:
      return "auto";
    case FusedAttentionKernel::Flash2:
      return "flash2";
    case FusedAttentionKernel::Flash3:
      return "flash3";
    case FusedAttentionKernel::Cudnn:
      return "cudnn";
  }
  return "auto";
}

double attention_rate_factor(const TrainingSpec& training, const GpuSpec& gpu)
{
  const bool hopper = gpu.compute_capability / 10 == 9;
  const bool mma_sync = training.attention == AttentionKernel::Sdpa && training.attention_kernel == FusedAttentionKernel::Flash2;
  return hopper && mma_sync ? kHopperMmaSyncShareOfPeak : 1.0;
}

std::string attention_rate_note(const TrainingSpec& training, const GpuSpec& gpu)
{
  const double f = attention_rate_factor(training, gpu);
  if (f == 1.0)
    return "";
  return fmt::format("attention ({}: mma.sync on {}) at {:.0f}% of the GEMMs' rate", to_string(training.attention_kernel),
                     gpu.name, 100 * f);
}

}  // namespace dtsim
