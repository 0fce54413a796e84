// PyTorch DistributedDataParallel: one process per GPU, any number of nodes. Parameters broadcast
// once at start; BatchNorm buffers broadcast from rank 0 before every forward (broadcast_buffers);
// gradients reduced in buckets (bucket_cap_mb, first bucket 1 MiB, reverse parameter order), each
// bucket's AllReduce launched in bucket order as soon as its gradients are ready, overlapping the
// rest of backward, one at a time on the NCCL stream; optimizer step on every GPU.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

namespace dtsim {

struct DdpOptions {
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  bool broadcast_buffers = true;
  int gradient_accumulation = 1;   ///< micro-steps per update; all but the last under no_sync()
};

/// The options of strategy ddp or single, but gradient_accumulation: that is the scenario's
/// (Scenario::training.batch.accumulation, from micro_batch and global_batch or the strategy's member).
DdpOptions parse_ddp_options(const JsonReader& strategy);

/// Builds `iterations` DDP iterations (the first `warmup` are not measured).
Plan build_ddp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                    const CollectiveOptions& collectives = {});

/// Bytes per gradient element: 2 for pure fp16/bf16 training, 4 otherwise (AMP keeps fp32 grads).
double gradient_bytes_per_element(Precision precision);

/// The same as Megatron-LM keeps and reduces them: bf16 runs in fp32 (megatron/training/arguments.py:
/// "bfloat16 requires gradient accumulation and all-reduce to be done in fp32", unless
/// --grad-reduce-in-bf16), its main_grad buffer, which memory_timeline.hpp counts at 4 bytes too.
double megatron_gradient_bytes_per_element(Precision precision);

/// The first `count` GPUs of the cluster, in rank order; InputError at /gpus when there are fewer.
std::vector<int> pick_ranks(const Scenario& scenario, const Topology& topology);

}  // namespace dtsim
