// PyTorch Fully Sharded Data Parallel (strategy.kind "fsdp"; options in sharding_options.hpp), as
// its runtime schedules it (FSDP1: torch/distributed/fsdp/_runtime_utils.py, _limiter_utils.py;
// FSDP2: torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, _fsdp_collectives.py):
//
// - Units (shard_units.hpp): one per transformer layer or CNN stage, plus the root.
// - Forward: each unit's parameters are AllGathered before its forward and freed after it
//   (reshard_after_forward); the root's stay until the end of backward. The CPU runs ahead of the
//   GPU, so the next unit's AllGather overlaps the current forward; the rate limiter
//   (limit_all_gathers; FSDP2's two AllGather outputs) lets unit u's AllGather start only once unit
//   u-2's forward has freed its parameters.
// - Backward, units in reverse: AllGather again (not when the parameters stayed: shard_grad_op or
//   reshard_after_forward false), then the unit's backward, then the ReduceScatter of its gradients.
//   backward_pre issues the next unit's AllGather before the current backward, ahead of the
//   current ReduceScatter; backward_post after the current backward; none when the next unit's
//   backward begins, behind the current ReduceScatter. hybrid_shard AllReduces each reduced shard
//   across the replicas on a second process group; no_shard AllReduces whole gradients.
// - All collectives of one process group queue on its one NCCL stream, in issue order.
// - FSDP2 copies each gathered unit out of the AllGather buffer into its parameters on the compute
//   stream (foreach_all_gather_copy_out: one read and one write of the unsharded bytes).
// - With tensor parallelism, each unit's compute carries Megatron-style collectives among its
//   tensor ranks (megatron_stage.hpp), as torchtitan's 2-D parallelism runs them.
// - Gradient accumulation: every micro-step reduce-scatters, or (no_sync) only the last.
// - The optimizer steps on each rank's shard (memory-bound, when compute comes from FLOPs).
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

namespace dtsim {

/// Builds `iterations` FSDP iterations (the first `warmup` are not measured).
Plan build_fsdp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                     const CollectiveOptions& collectives = {});

}  // namespace dtsim
