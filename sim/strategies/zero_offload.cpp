// See zero_offload.hpp.
#include "sim/strategies/zero_offload.hpp"

#include "sim/strategies/loader.hpp"
#include "sim/strategies/optimizer_step.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

std::vector<OffloadCopy> offload_gradient_copies(int stage, int m, int micro_steps, double grad_bytes)
{
  const bool boundary = m + 1 == micro_steps;
  std::vector<OffloadCopy> copies;
  if (stage == 3) {
    if (m == 0)
      copies = {{true, grad_bytes}, {false, grad_bytes}};
    else
      copies = {{false, grad_bytes}, {true, grad_bytes}};
  } else if (m > 0 || !boundary) {
    if (m > 0)
      copies.push_back({false, grad_bytes});
    copies.push_back({true, grad_bytes});
  }
  if (boundary)
    copies.push_back({true, 4});
  return copies;
}

double cpu_step_bytes_per_element(double state_bytes, double half_bytes)
{
  return 4 + 4 + 2 * state_bytes + 4 + 4 + half_bytes;
}

double cpu_step_seconds(double partition_elements, double bytes_per_element, int ranks_per_node, int threads,
                        const Topology::Host& host)
{
  const double dram = host.memory_bytes_per_s_per_socket * std::max(1, host.sockets) * kMemoryBoundFraction;
  if (!(dram > 0))
    return 0.0;
  const int processes = std::max(1, ranks_per_node);
  double rate = dram;
  // Threads each at one core's STREAM rate (loader.hpp's kPinCopyBytesPerS), never more than the
  // node's hardware threads run at once.
  const int hardware = host.cores * std::max(1, host.threads_per_core);
  if (threads > 0) {
    const int running = hardware > 0 ? std::min(processes * threads, hardware) : processes * threads;
    rate = std::min(rate, running * kPinCopyBytesPerS);
  }
  return processes * partition_elements * bytes_per_element / rate;
}

double offload_host_bytes(const ZeroOptions& opt, double partition_elements, double state_bytes, double model_bytes,
                          double grad_bytes, int micro_steps)
{
  double per_element = opt.offload_param ? model_bytes : 0.0;
  if (opt.offload_optimizer) {
    per_element += 4 + state_bytes + 4;
    if (opt.stage < 3)
      per_element += model_bytes + (micro_steps > 1 ? grad_bytes : 0.0);
    else
      per_element += grad_bytes;
  }
  return partition_elements * per_element;
}

std::string offload_note(const ZeroOptions& opt, double host_bytes_per_process, int ranks_per_node, double step_s,
                         const Topology::Host& host)
{
  const int sockets = std::max(1, host.sockets);
  std::string what = opt.offload_optimizer ? "fp32 weights, optimizer states and gradients" : "";
  if (opt.offload_param)
    what += std::string(what.empty() ? "" : ", ") + "the partitioned parameters (copied in before each gather)";
  const bool pageable = (opt.offload_optimizer && !opt.offload_optimizer_pinned) || (opt.offload_param && !opt.offload_param_pinned);
  std::string out = fmt::format("ZeRO-Offload (stage {}): {} on the host, {:.1f} GiB per process, {:.1f} GiB for the node's {} ({})",
                                opt.stage, what, host_bytes_per_process / (1ull << 30),
                                ranks_per_node * host_bytes_per_process / (1ull << 30), ranks_per_node,
                                pageable ? fmt::format("pageable where pin_memory is false: those copies at {:.3g} GB/s to the GPU "
                                                       "and {:.3g} GB/s from it at most ({}), and compute waits for them",
                                                       pageable_copy_bytes_per_s(host, false) / 1e9, pageable_copy_bytes_per_s(host, true) / 1e9,
                                                       host.pageable_h2d_bytes_per_s > 0 || host.pageable_d2h_bytes_per_s > 0
                                                           ? "measured, from the calibration"
                                                           : "staged by one CPU thread")
                                         : std::string("pinned"));
  if (opt.offload_optimizer)
    out += fmt::format("; CPU step {:.4f} s, the node's processes at once on {} ({} x {:.0f} GB/s at {:.0f}%); gradients "
                       "copied to the host after each reduction{}",
                       step_s,
                       opt.offload_threads > 0 ? fmt::format("{} OpenMP thread(s) each, at most the DRAM bandwidth", opt.offload_threads)
                                               : std::string("every hardware thread: DRAM bandwidth"),
                       sockets, host.memory_bytes_per_s_per_socket / 1e9, 100 * kMemoryBoundFraction,
                       opt.offload_param ? ""
                       : opt.stage == 3
                           // stage3.py _reassign_or_swap_out_partitioned_parameters: a blocking copy_ of the fp32
                           // partition into the half-precision one, converted on the host first (Copy.cu).
                           ? ", the updated parameters back before the next forward (PCIe; in half precision a blocking "
                             "copy through a pageable tensor whatever pin_memory: PyTorch converts them on the host first)"
                           : ", the updated parameters back before the next forward (PCIe)");
  return out;
}

}  // namespace dtsim
