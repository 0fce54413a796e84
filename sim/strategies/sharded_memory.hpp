// What each GPU holds under sharded data parallelism, through the iteration walk of
// memory_timeline.hpp, in the accounting of the ZeRO paper (Rajbhandari et al. 2020, section 3.1)
// and of the frameworks' own estimators (DeepSpeed estimate_zero2_model_states_mem_needs: 2 + 18/N
// bytes per parameter at stage 2; estimate_zero3_model_states_mem_needs: 4 x the largest layer + 18/N).
//
// FSDP keeps its sharded parameters, their gradients and the optimizer states in the parameters'
// own dtype (fp32) on 1/shard of the model each, and gathers units in mixed_precision.param_dtype:
// the root for the whole iteration, and at most two other units at a time under the rate limiter
// (every unit until its backward when parameters stay after forward). The unit being reduced holds
// its unsharded gradient. DeepSpeed keeps the module's half-precision weights (partitioned at
// stage 3, with the fetched modules and the prefetch window), its half-precision gradients (stage
// 1) or a bucket and their partition (stages 2, 3), the fp32 copy of the partition's gradients its
// step makes, and the fp32 master weights with the optimizer states on 1/N.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <vector>

namespace dtsim {

/// Per GPU of `ranks` (each the same) under FSDP with `tensor` tensor ranks per data rank.
/// `curve`, when given, receives the iteration's memory moments (gpu_memory's curve).
std::vector<GpuMemory> sharded_fsdp_memory(const Model& model, const ShardUnits& units, const Scenario& scenario,
                                           const GpuSpec& gpu, const FsdpOptions& opt, const std::vector<int>& ranks,
                                           int tensor, double micro, double input_bytes_per_sample,
                                           std::vector<MemoryPoint>* curve = nullptr);

/// Per GPU of `ranks` (one replica each) under DeepSpeed ZeRO, its states partitioned over
/// `partitions` ranks (every data-parallel rank, also when `ranks` holds only a folded plan's
/// representative). `gathered` is the parameters (elements) gathered at once at the peak (stage 3).
/// `curve`, when given, receives the iteration's memory moments (gpu_memory's curve).
std::vector<GpuMemory> sharded_zero_memory(const Model& model, const Scenario& scenario, const GpuSpec& gpu,
                                           const ZeroOptions& opt, const std::vector<int>& ranks, int partitions,
                                           double micro, double input_bytes_per_sample, double gathered,
                                           std::vector<MemoryPoint>* curve = nullptr);

}  // namespace dtsim
