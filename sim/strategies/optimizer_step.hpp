// The optimizer step's time on a GPU when compute comes from FLOPs (a measured step already holds
// it): memory-bound (FusedAdam / foreach SGD), each step reads the fp32 weights, gradients and
// optimizer states and writes weights and states, plus the half-precision copy of the weights for
// fp16/bf16 training (Megatron's _copy_main_params_to_model_params). Bytes per parameter from the
// memory rules (memory.hpp).
#pragma once

#include "sim/strategies/memory.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <string>

namespace dtsim {

/// A memory-bound kernel reaches about 85% of the HBM datasheet bandwidth (as ddp.cpp's bucket copies:
/// a STREAM-like copy reaches 80-90%).
constexpr double kMemoryBoundFraction = 0.85;

/// The passes of Megatron-LM's half-precision optimizer over each parameter besides the Adam kernel
/// and the half-weight write (megatron/optimizer/optimizer.py, MixedPrecisionOptimizer.step, and
/// DistributedDataParallel.zero_grad_buffer): the in-place unscale and inf/nan check of the fp32
/// gradient (torch._amp_foreach_non_finite_check_and_unscale_: read + write, 8 B), the gradient norm
/// for clipping (clip_grad_norm_fp32: read, 4 B; its scaling pass runs only when the norm exceeds
/// the clip, not counted), the read of the fp32 master weight by _copy_main_params_to_model_params
/// (4 B) and the zeroing of the fp32 gradient buffer before the next iteration (4 B). Counted with
/// training.compute.model "roofline", which times memory-bound kernels by their bytes.
constexpr double kMegatronStepPassBytes = 8 + 4 + 4 + 4;

/// Seconds of the optimizer step over `params` parameters; `extra_bytes` per parameter beside the
/// Adam kernel's, at `memory_fraction` of the HBM bandwidth.
double optimizer_seconds(double params, const MemoryRules& mem, bool half_weights, const GpuSpec& gpu,
                         double extra_bytes = 0, double memory_fraction = kMemoryBoundFraction);

/// The same where the weights, their gradients and the optimizer's states are all in one dtype of
/// `element_bytes` (a module trained in half precision without fp32 master weights); `state_bytes`
/// per parameter are the optimizer's states in fp32 (memory rules), scaled to that dtype.
double optimizer_seconds_in_dtype(double params, double element_bytes, double state_bytes, const GpuSpec& gpu);

/// The report's note on the optimizer step: added (memory-bound, on each rank's `what`, e.g.
/// "1/8 shard") or folded into a measured step.
std::string optimizer_note(bool added, const std::string& what);

/// Seconds of a memory-bound kernel that moves `bytes` through HBM in all (reads and writes
/// together), at kMemoryBoundFraction of the bandwidth; 0 for a GPU without a bandwidth.
double memory_bound_seconds(double bytes, const GpuSpec& gpu);

/// Seconds of a memory-bound copy that reads and writes `bytes` once each.
double copy_seconds(double bytes, const GpuSpec& gpu);

}  // namespace dtsim
