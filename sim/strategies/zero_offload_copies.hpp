// ZeRO-Offload's copies in the plan (what crosses PCIe and why: zero_offload.hpp): the gradients
// after each bucket's reduction, and the updated parameters after the step; each tallied
// (zero_tally.hpp).
#pragma once

#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/zero_tally.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// With offload_optimizer, the rank's share of a reduced bucket (`elements`, `grad_bytes` each)
/// copied on the reduction's stream after `done`, as DeepSpeed issues the copies in micro-step `m`
/// of `micro_steps`; `at` names the bucket. Returns the last copy's tasks (`done` without offload).
std::vector<int> offload_gradients(ZeroTally& tally, const ZeroOptions& opt, std::vector<int> done, double elements, int m,
                                   int micro_steps, double grad_bytes, const std::string& at);

/// After the step, where only one of the optimizer and the parameters is offloaded: the updated
/// partition of `partition_bytes` in the module's dtype to where the parameters live; `half`: the
/// module is in half precision.
void offload_updated_parameters(ZeroTally& tally, const ZeroOptions& opt, double partition_bytes, bool half);

}  // namespace dtsim
