// FSDP's CPU offload: FSDP1's CPUOffload(offload_params=True) (torch/distributed/fsdp/api.py) and
// FSDP2's CPUOffloadPolicy (torch/distributed/fsdp/_fully_shard/_fsdp_api.py). Each rank's sharded
// parameters, their gradients and, through torch.optim's zeros_like(param), the optimizer's states
// live in host memory, and the optimizer steps there with torch.optim on the CPU. As PyTorch moves
// the data:
//
// - Before each AllGather, forward and backward, the rank's shard of the unit goes to the GPU:
//   FSDP1's pre_unshard on its pre-unshard stream (_flat_param.py: flat_param_to(device,
//   non_blocking=True), or _use_low_precision_shard's _local_shard.to(device) before the cast to
//   param_dtype); FSDP2's all_gather_inputs on the all-gather copy-in stream (_fsdp_param.py:
//   sharded_param_data.to(device, non_blocking=True)). The copy is in the shard's own dtype.
// - After each reduction, the gradient shard, cast to the parameters' dtype, goes to the host on the
//   stream that reduced it (FSDP1 _runtime_utils.py _offload_grad: _cpu_grad.copy_(grad,
//   non_blocking=True) on the post-backward stream; FSDP2 _fsdp_collectives.py foreach_reduce:
//   new_sharded_grad.to("cpu", non_blocking=pin_memory and not accumulating)). FSDP2 accumulating into
//   an existing host gradient (a later micro-step without no_sync) copies synchronously, so the host
//   issues nothing more until the reduction and the copy are done, and adds on the host.
// - At the end of backward the host waits for those copies (FSDP1 _post_backward_final_callback:
//   current_stream().synchronize() under offload_params; FSDP2 finalize_backward waits on each
//   gradient's offload event), then the optimizer steps on the host's cores while the GPU idles.
#pragma once

#include "sim/topology/topology.hpp"

#include <string>

namespace dtsim {

/// Host memory traffic per element of torch.optim's step on CPU tensors, counted as STREAM counts
/// it (each operand read, each result written), for `optimizer` (one of optimizer_names(),
/// scenario.hpp) over elements of `element_bytes` (the shards' dtype). torch.optim picks the
/// per-tensor loop for CPU parameters unless fused=True (optimizer.py _default_to_fused_or_foreach:
/// foreach only where every tensor is on a CUDA-like device), so "-foreach" is the loop too.
double torch_cpu_step_bytes_per_element(const std::string& optimizer, double element_bytes);

/// Host memory of one process's offloaded state per sharded element: the shard, its gradient and
/// the optimizer's states (`state_bytes` per element in fp32, scaled to `element_bytes`).
double fsdp_offload_host_bytes_per_element(double element_bytes, double state_bytes);

/// The run's note: what is on the host and how much, the copies, the CPU step and what bounds it.
std::string fsdp_cpu_offload_note(double host_bytes_per_process, int ranks_per_node, bool pinned, int threads,
                                  double step_s, double h2d_bytes, double d2h_bytes, const Topology::Host& host);

}  // namespace dtsim
