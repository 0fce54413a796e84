// DeepSpeed ZeRO (strategy.kind "zero", stage 1 | 2 | 3; options in sharding_options.hpp), as its
// runtime schedules it:
//
// - Stages 1 and 2 (deepspeed/runtime/zero/stage_1_and_2.py): every rank runs the whole model.
//   Gradients are AllReduced in buckets of reduce_bucket_size elements (average_tensor; its
//   per-rank partitions are reduced with one AllReduce of the bucket). Stage 2 reduces each bucket
//   as soon as it fills during backward, every micro-step; stage 1 in the last micro-step only
//   (reduce_ready_partitions_and_remove_grads), as its buckets fill with overlap_comm (which also
//   registers the gradient hooks), otherwise after that micro-step's backward.
//   Without overlap_comm the reduction runs on the compute stream and backward waits for it.
//   Each rank steps the optimizer on its 1/N partition, then the updated parameters are
//   AllGathered (all_gather_dp_groups: one all_gather_into_tensor per parameter group; the
//   allgather_bucket_size pieces are only its fallback for torch without that call) before the
//   next forward.
// - Stage 3 (stage3.py, partitioned_param_coordinator.py): every module's parameters are
//   partitioned, but those of fewer than stage3_param_persistence_threshold elements. Each module
//   is fetched (one coalesced AllGather) before its forward and again before its backward unless
//   it stayed gathered; the coordinator prefetches ahead and decides what stays
//   (zero3_coordinator.hpp). Gradients are reduce-scattered in buckets of reduce_bucket_size
//   elements as they fill, on the same process group (one NCCL stream), every micro-step. With MiCS
//   (mics.py) the shard group is mics_shard_size consecutive ranks and each bucket's shard is
//   AllReduced across the groups at the accumulation boundary; with ZeRO++'s hpZ a secondary copy
//   over zero_hpz_partition_size consecutive ranks serves every gather but the first forward's.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

namespace dtsim {

Plan build_zero_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                     const CollectiveOptions& collectives = {});

}  // namespace dtsim
