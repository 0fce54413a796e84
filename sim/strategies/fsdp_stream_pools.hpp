// The caching allocator's memory that FSDP2 holds on its own CUDA streams, beside the compute
// stream's.
//
// PyTorch's caching allocator keeps its free blocks per stream: a block freed by a kernel queue is
// handed out again only to allocations made on that same stream (c10/cuda/CUDACachingAllocator.cpp:
// BlockComparator orders blocks by stream first, get_free_block searches the requesting stream's
// blocks only; a block is released to the device only by empty_cache or when a cudaMalloc fails).
// The reserved bytes are therefore the sum of what each stream's pool once needed, not the peak of
// the sum. FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, _fsdp_param_group.py)
// allocates on two streams of its own:
//  - the all-gather copy-in stream: each unit's flat AllGather output (the whole unit in
//    param_dtype), kept until the next unit's AllGather has been waited on (FSDPCommContext's
//    all_gather_state), so two units' outputs at once. The root's output comes first, while the
//    first transformer block's is allocated, so the pool grows to root + one unit (or two units when
//    a unit is larger than the root). The parameters themselves are copied out of it into tensors
//    of the compute stream (foreach_all_gather_copy_out), which the walk of memory_timeline.hpp
//    counts as gathered parameters.
//  - the reduce-scatter stream: each unit's reduce-scatter output, whose views become the sharded
//    gradients (foreach_reduce: reduce_output is allocated under reduce_scatter_stream and
//    as_strided into sharded_param.grad when reduce_dtype is the parameters' dtype; otherwise cast
//    to it on that stream, the reduce-dtype output living until the cast). The gradients are freed
//    by the next zero_grad, into that pool: the compute stream's activations cannot take their
//    blocks. With CPU offload (fsdp_cpu_offload.hpp) each unit's gradient shard is copied to the host
//    on that stream and its GPU tensor dropped at once (foreach_reduce: "future RS-stream ops run
//    after the copy"), so the pool holds one unit's. (PyTorch 2.4's _composable/fsdp allocated the reduce-scatter input there too; since
//    the move to _fully_shard it is allocated on the compute stream, which the walk already counts.)
#pragma once

#include "sim/strategies/shard_units.hpp"

#include <vector>

namespace dtsim {

/// Reserved bytes of one GPU's FSDP2 side streams.
struct Fsdp2StreamPools {
  double all_gather = 0;      ///< the all-gather copy-in stream's pool
  double reduce_scatter = 0;  ///< the reduce-scatter stream's pool: every sharded gradient
  double total() const { return all_gather + reduce_scatter; }
};

/// The pools for `units` sharded over `shard` ranks, each rank holding 1/`tensor` of a unit's
/// parameters (tensor parallelism), gathered in `param_bytes[u]` per parameter of unit u (its
/// param_dtype, or less with float8 linears), reduced in `reduce_bytes` and kept as gradients in
/// `grad_bytes` (the parameters' own dtype). Each tensor is rounded to the allocator's block
/// (allocator_block_bytes, memory_timeline.hpp). `offloaded`: the gradient shards go to the host.
Fsdp2StreamPools fsdp2_stream_pools(const ShardUnits& units, double tensor, double shard,
                                    const std::vector<double>& param_bytes, double reduce_bytes, double grad_bytes,
                                    bool offloaded = false);

}  // namespace dtsim
