// ZeRO-Offload (DeepSpeed's offload_optimizer, device "cpu"; Ren et al., "ZeRO-Offload:
// Democratizing Billion-Scale Model Training", USENIX ATC 2021): the fp32 master weights, the
// optimizer's states and the fp32 gradients of each rank's partition live in host memory, the
// optimizer step runs on the host's cores (DeepSpeedCPUAdam), and the GPU keeps the half-precision
// parameters. What crosses PCIe, as DeepSpeed's code moves it:
//
// - Stages 1-2 (stage_1_and_2.py copy_grads_in_partition, after each bucket's reduction, for the
//   rank's partition): in a micro-step that is not the only one, async_accumulate_grad_in_cpu_via_gpu
//   brings the host's accumulated gradients back (host -> GPU, after the first micro-step), adds,
//   and copies the sum out (GPU -> host), both in the gradients' dtype; at the accumulation boundary
//   async_inplace_copy_grad_to_fp32_buffer_from_gpu casts to fp32 on the GPU and copies it out.
// - Stage 3 (stage3.py partition_grads, after each ReduceScatter; its grad_partitions_flat_buffer
//   is on the host): the first micro-step copies the gradient partition out and back in ("ensure
//   grad buffer is a CUDA buffer"), a later one in, adds, and out; at the boundary
//   _offload_grad_partition_at_boundary copies it out again in fp32.
// - The step (stage_1_and_2.py step(), stage3.py _optimizer_step and
//   _reassign_or_swap_out_partitioned_parameters): CPU Adam over the partition, the fp32 weights
//   cast to the half-precision copy on the host, that copy sent to the GPU.
// - offload_param (stage 3, "ZeRO-Infinity" on the CPU): the partitioned parameters live on the
//   host; each gather first copies the rank's partitions to the GPU on the gather's stream
//   (partition_parameters.py _all_gather_dtype: ds_tensor.to(device)); the step's updated copy stays
//   on the host (or, with the optimizer on the GPU, goes there).
#pragma once

#include "sim/strategies/sharding_options.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// One copy of a gradient partition between GPU and host: its direction and bytes per element.
struct OffloadCopy {
  bool to_host = true;
  double bytes_per_element = 0;
};

/// The copies after a gradient reduction in micro-step `m` of `micro_steps` (stage 1, 2 or 3;
/// `grad_bytes`: the gradients' dtype), in the order DeepSpeed issues them on its reduction stream.
std::vector<OffloadCopy> offload_gradient_copies(int stage, int m, int micro_steps, double grad_bytes);

/// Host memory traffic of the CPU step per partition element: DeepSpeedCPUAdam reads the fp32
/// weight, gradient and states and writes weight and states (csrc/includes/cpu_adam.h, Step_AVX:
/// with Adam's two fp32 moments 4 x 4 + 3 x 4 bytes), then the weights are cast to the copy in the
/// module's dtype sent to the GPU (read 4, write `half_bytes`).
double cpu_step_bytes_per_element(double state_bytes, double half_bytes);

/// Seconds of the CPU step of one rank's `partition_elements`, every one of the node's
/// `ranks_per_node` processes stepping at once: memory-bound on the host's DRAM (every socket's
/// vendor bandwidth at kMemoryBoundFraction), or on the processes' threads (`threads` each, 0:
/// every hardware thread of the node) at one core's STREAM rate each. 0 when the host's memory
/// bandwidth is not given.
double cpu_step_seconds(double partition_elements, double bytes_per_element, int ranks_per_node, int threads,
                        const Topology::Host& host);

/// Host memory of one process's offloaded partition, bytes. offload_optimizer: fp32 master weights,
/// the optimizer's states and fp32 gradients, the weights' copy in the module's dtype the step
/// writes (stages 1-2: param_buffer_of_bit16_for_cpu_offload_groups) and the gradients accumulated on
/// the host (stages 1-2 with more than one micro-step: accumulated_grads_in_cpu; stage 3:
/// grad_partitions_flat_buffer); offload_param: the partitioned parameters in the module's dtype.
double offload_host_bytes(const ZeroOptions& opt, double partition_elements, double state_bytes, double model_bytes,
                          double grad_bytes, int micro_steps);

/// The run's note: what is on the host and how much per node, the step there and what limits it.
std::string offload_note(const ZeroOptions& opt, double host_bytes_per_process, int ranks_per_node, double step_s,
                         const Topology::Host& host);

}  // namespace dtsim
