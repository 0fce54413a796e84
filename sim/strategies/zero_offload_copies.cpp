// See zero_offload_copies.hpp.
#include "sim/strategies/zero_offload_copies.hpp"

#include "sim/strategies/zero_offload.hpp"

#include <fmt/format.h>

#include <optional>

namespace dtsim {

std::vector<int> offload_gradients(ZeroTally& tally, const ZeroOptions& opt, std::vector<int> done, double elements, int m,
                                   int micro_steps, double grad_bytes, const std::string& at)
{
  if (!opt.offload_optimizer)
    return done;
  for (const auto& c : offload_gradient_copies(opt.stage, m, micro_steps, grad_bytes))
    done = tally.offload_copy(ShardedRun::Stream::Shard, elements * c.bytes_per_element, c.to_host, opt.offload_optimizer_pinned,
                              "gradients", fmt::format("gradients at {} {}", at, c.to_host ? "to host" : "from host"));
  return done;
}

void offload_updated_parameters(ZeroTally& tally, const ZeroOptions& opt, double partition_bytes, bool half)
{
  // The updated partition in the module's dtype to where the parameters live (stage3.py
  // _reassign_or_swap_out_partitioned_parameters; with offload_param both are on the host).
  // Stages 1-2 cast on the host into the pinned param_buffer_of_bit16_for_cpu_offload_groups and
  // copy it with non_blocking=True (stage_1_and_2.py step()). Stage 3 copies the fp32 partition
  // straight into the half-precision one, a blocking copy_ across devices and dtypes, which
  // PyTorch converts on the CPU (aten/src/ATen/native/cuda/Copy.cu copy_kernel_cuda: "For
  // blocking transfers conversions are performed on CPU"): to the GPU from a fresh converted
  // tensor, to the host (offload_param) into a fresh fp32 one, pageable either way whatever
  // pin_memory says: a pageable copy that compute waits for.
  const bool converted_on_host = opt.stage == 3 && half;
  if (opt.offload_optimizer != opt.offload_param)
    tally.offload_copy(std::nullopt, partition_bytes, opt.offload_param,
                       !converted_on_host && (opt.offload_param ? opt.offload_param_pinned : opt.offload_optimizer_pinned),
                       "updated parameters", opt.offload_param ? "updated parameters to host" : "updated parameters from host");
}

}  // namespace dtsim
