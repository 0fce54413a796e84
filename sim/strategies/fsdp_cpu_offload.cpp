// See fsdp_cpu_offload.hpp.
#include "sim/strategies/fsdp_cpu_offload.hpp"

#include "sim/strategies/loader.hpp"
#include "sim/strategies/optimizer_step.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

double torch_cpu_step_bytes_per_element(const std::string& optimizer, double element_bytes)
{
  std::string base = optimizer;
  bool fused = false;
  for (const std::string suffix : {"-foreach", "-fused", "-for-loop"})
    if (base.ends_with(suffix)) {
      fused = suffix == "-fused";
      base.resize(base.size() - suffix.size());
    }
  const double e = element_bytes;
  // Passes as torch/optim/adam.py _single_tensor_adam runs them (amsgrad off, not capturable):
  //   AdamW's decoupled weight decay (default 1e-2; Adam's default is 0): param.mul_      r 1  w 1
  //   exp_avg.lerp_(grad, 1 - beta1)                                                   r 2  w 1
  //   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)                     r 1+2 w 1+1
  //   denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): two new tensors   r 3  w 3
  //   param.addcdiv_(exp_avg, denom, value=-step_size)                                 r 3  w 1
  // The fused CPU kernel (aten/src/ATen/native/cpu/FusedAdamKernel.cpp, PyTorch 2.4+) reads param,
  // grad and both moments once and writes param and the moments.
  // SGD with momentum (torch/optim/sgd.py _single_tensor_sgd, weight decay 0 by default):
  //   buf.mul_(momentum).add_(grad, alpha=1 - dampening), param.add_(buf, alpha=-lr)  r 1+2+2 w 1+1+1
  // fused (FusedSGDKernel.cpp): param, grad and buf read, param and buf written. Plain SGD: param.add_.
  if (base == "adam" || base == "adamw") {
    const double decay = base == "adamw" ? 2 : 0;
    return e * (fused ? 7 : decay + 3 + 5 + 6 + 4);
  }
  if (base == "sgd")
    return e * (fused ? 5 : 8);
  return e * 3;  // sgd-plain, fused or not: read param and grad, write param
}

double fsdp_offload_host_bytes_per_element(double element_bytes, double state_bytes)
{
  return element_bytes + element_bytes + state_bytes * element_bytes / 4;
}

std::string fsdp_cpu_offload_note(double host_bytes_per_process, int ranks_per_node, bool pinned, int threads,
                                  double step_s, double h2d_bytes, double d2h_bytes, const Topology::Host& host)
{
  const double gib = 1ull << 30;
  return fmt::format(
      "CPU offload: sharded parameters, gradients and optimizer states on the host, {:.1f} GiB per process, {:.1f} GiB for "
      "the node's {}; {:.2f} GiB of shards to the GPU before the AllGathers and {:.2f} GiB of gradient shards back per "
      "iteration ({}); CPU optimizer step {:.4f} s, the node's processes at once on {} thread{} each (at most {} "
      "hardware threads, one core's {:.0f} GB/s each, {} x {:.0f} GB/s DRAM at {:.0f}%), the GPU idle meanwhile",
      host_bytes_per_process / gib, ranks_per_node * host_bytes_per_process / gib, ranks_per_node, h2d_bytes / gib,
      d2h_bytes / gib,
      pinned ? "pinned" : fmt::format("pageable: at {:.3g} GB/s to the GPU and {:.3g} GB/s from it at most, compute waiting",
                                      pageable_copy_bytes_per_s(host, false) / 1e9, pageable_copy_bytes_per_s(host, true) / 1e9),
      step_s, threads, threads == 1 ? "" : "s", host.cores * std::max(1, host.threads_per_core), kPinCopyBytesPerS / 1e9,
      std::max(1, host.sockets), host.memory_bytes_per_s_per_socket / 1e9, 100 * kMemoryBoundFraction);
}

}  // namespace dtsim
