#include "sim/plan/task_category.hpp"

namespace dtsim {

const char* to_string(TaskCategory category)
{
  switch (category) {
    case TaskCategory::None: return "";
    case TaskCategory::Marker: return "marker";
    case TaskCategory::Load: return "load";
    case TaskCategory::HostToDevice: return "h2d";
    case TaskCategory::Offload: return "offload";
    case TaskCategory::Launch: return "launch";
    case TaskCategory::Forward: return "forward";
    case TaskCategory::Backward: return "backward";
    case TaskCategory::Recompute: return "recompute";
    case TaskCategory::Loss: return "loss";
    case TaskCategory::Optimizer: return "optimizer";
    case TaskCategory::DdpCopy: return "ddp-copy";
    case TaskCategory::FsdpCopy: return "fsdp-copy";
    case TaskCategory::FsdpCopyIn: return "fsdp-copy-in";
    case TaskCategory::FsdpCopyBackward: return "fsdp-copy-backward";
    case TaskCategory::FsdpGradCopy: return "fsdp-grad-copy";
    case TaskCategory::FsdpGradPass: return "fsdp-grad-pass";
    case TaskCategory::BucketCopy: return "bucket-copy";
    case TaskCategory::Scatter: return "scatter";
    case TaskCategory::GradScatter: return "grad-scatter";
    case TaskCategory::Gather: return "gather";
    case TaskCategory::Replicate: return "replicate";
    case TaskCategory::Reduce: return "reduce";
    case TaskCategory::Broadcast: return "broadcast";
    case TaskCategory::AllReduce: return "allreduce";
    case TaskCategory::AllGather: return "allgather";
    case TaskCategory::AllGatherBackward: return "allgather-backward";
    case TaskCategory::ReduceScatter: return "reduce-scatter";
    case TaskCategory::AllToAll: return "alltoall";
    case TaskCategory::SendRecv: return "sendrecv";
    case TaskCategory::TensorParallel: return "tensor-parallel";
    case TaskCategory::Activation: return "activation";
    case TaskCategory::ActivationGrad: return "activation-grad";
    case TaskCategory::EmbeddingGrad: return "embedding-grad";
  }
  return "?";
}

}  // namespace dtsim
