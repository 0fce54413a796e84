// What each GPU holds under sharded data parallelism (bytes), in the accounting of the ZeRO paper
// (Rajbhandari et al. 2020, section 3.1) and of the frameworks' own estimators
// (DeepSpeed estimate_zero2_model_states_mem_needs: 2 + 18/N bytes per parameter at stage 2;
// estimate_zero3_model_states_mem_needs: 4 x the largest layer + 18/N).
//
// FSDP keeps its sharded parameters, their gradients and the optimizer states in the parameters'
// own dtype (fp32) on 1/shard of the model each, and gathers units in mixed_precision.param_dtype:
// the root for the whole iteration, and at most two other units at a time under the rate limiter
// (every unit until its backward when parameters stay after forward). The unit being reduced holds
// its unsharded gradient. Activations are those of one micro-batch (memory.hpp).
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharding_options.hpp"

#include <vector>

namespace dtsim {

/// Activations one rank keeps for a micro-batch of `micro` samples with `tensor` tensor ranks, under
/// training.activation_checkpointing (full keeps each transformer layer's input).
double micro_batch_activations(const Model& model, const Scenario& scenario, const MemoryRules& mem, double micro,
                               int tensor);

std::vector<GpuMemory> sharded_fsdp_memory(const Model& model, const ShardUnits& units, const Scenario& scenario,
                                           const MemoryRules& mem, const FsdpOptions& opt, const std::vector<int>& ranks,
                                           int tensor, double micro, double input_bytes_per_sample);

/// DeepSpeed ZeRO stage 1-3 on `ranks` (one replica per GPU). `largest_gathered` is the parameters
/// of the largest module fetched at once (stage 3).
std::vector<GpuMemory> sharded_zero_memory(const Model& model, const Scenario& scenario, const MemoryRules& mem,
                                           const ZeroOptions& opt, const std::vector<int>& ranks, double micro,
                                           double input_bytes_per_sample, double largest_gathered);

}  // namespace dtsim
