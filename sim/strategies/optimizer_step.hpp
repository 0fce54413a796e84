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

/// Seconds of the optimizer step over `params` parameters.
double optimizer_seconds(double params, const MemoryRules& mem, bool half_weights, const GpuSpec& gpu);

/// The report's note on the optimizer step: added (memory-bound, on each rank's `what`, e.g.
/// "1/8 shard") or folded into a measured step.
std::string optimizer_note(bool added, const std::string& what);

/// Seconds of a memory-bound copy that reads and writes `bytes` once each.
double copy_seconds(double bytes, const GpuSpec& gpu);

}  // namespace dtsim
