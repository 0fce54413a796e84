// What kind of step a task is: the report groups, colours and explains tasks by it. Each category
// has one spelling (to_string), the word the reports, traces and the step table print.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace dtsim {

enum class TaskCategory : std::uint8_t {
  None,               ///< ""  (a task made without one)
  Marker,             ///< "marker": a zero-length join or boundary, never drawn
  // host and input
  Load,               ///< "load": the DataLoader prepares a batch on the host
  HostToDevice,       ///< "h2d": the input batch copied host -> GPU
  Offload,            ///< "offload": ZeRO-Offload's gradients to the host and updated parameters back
  Launch,             ///< "launch": Python / GIL launch overhead (nn.DataParallel)
  // compute
  Forward,            ///< "forward"
  Backward,           ///< "backward"
  Recompute,          ///< "recompute": the forward recomputed in backward (activation checkpointing)
  Loss,               ///< "loss"
  Optimizer,          ///< "optimizer"
  DdpCopy,            ///< "ddp-copy": DDP's bucket copies
  FsdpCopy,           ///< "fsdp-copy": FSDP2's copy-out of gathered parameters
  FsdpCopyIn,         ///< "fsdp-copy-in": each shard into the AllGather's input on its own stream (FSDP2's copy-in, FSDP1's low-precision cast)
  FsdpCopyBackward,   ///< "fsdp-copy-backward": FSDP2's copy-out again before a resharded unit's backward
  FsdpGradCopy,       ///< "fsdp-grad-copy": FSDP2's gradients copied into (or added to) the reduce dtype's buffers
  FsdpGradPass,       ///< "fsdp-grad-pass": FSDP1's casts and divisions of a unit's gradients on its post-backward stream
  BucketCopy,         ///< "bucket-copy": ZeRO's gradients copied into its contiguous bucket
  // Communication: every category from Scatter on (task_graph.hpp's is_collective_startup).
  // nn.DataParallel's transfers
  Scatter,            ///< "scatter": input chunks from GPU0
  GradScatter,        ///< "grad-scatter": the loss gradient from GPU0
  Gather,             ///< "gather": outputs to GPU0
  Replicate,          ///< "replicate": parameters broadcast to the replicas
  Reduce,             ///< "reduce": gradients reduced onto GPU0
  // collectives
  Broadcast,          ///< "broadcast"
  AllReduce,          ///< "allreduce": data-parallel gradients
  AllGather,          ///< "allgather": sharded parameters (forward)
  AllGatherBackward,  ///< "allgather-backward": sharded parameters gathered again for backward
  ReduceScatter,      ///< "reduce-scatter": sharded gradients
  AllToAll,           ///< "alltoall"
  SendRecv,           ///< "sendrecv"
  // model parallelism
  TensorParallel,     ///< "tensor-parallel": a tensor-parallel group's collectives
  Activation,         ///< "activation": activations sent to the next pipeline stage
  ActivationGrad,     ///< "activation-grad": their gradients sent back
  EmbeddingGrad,      ///< "embedding-grad": tied embedding gradients, first and last stage
};

/// The category's spelling in reports and traces ("tensor-parallel", ...; "" for None).
const char* to_string(TaskCategory category);

/// Orders categories by their spelling: reports that list categories with equal figures keep them
/// in alphabetical order.
struct BySpelling {
  bool operator()(TaskCategory a, TaskCategory b) const
  {
    return std::string_view(to_string(a)) < std::string_view(to_string(b));
  }
};

}  // namespace dtsim

/// Formats a TaskCategory as its spelling.
template <>
struct fmt::formatter<dtsim::TaskCategory> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(dtsim::TaskCategory category, FormatContext& ctx) const
  {
    return fmt::formatter<std::string_view>::format(std::string_view(dtsim::to_string(category)), ctx);
  }
};
