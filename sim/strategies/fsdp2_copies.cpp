// See fsdp2_copies.hpp.
#include "sim/strategies/fsdp2_copies.hpp"

#include "sim/strategies/optimizer_step.hpp"

#include <fmt/format.h>

namespace dtsim {

double Fsdp2Copies::gradients_per_iteration_s(int reductions, int micro_steps) const
{
  double s = 0;
  for (std::size_t u = 0; u < grad_copy_in_s.size(); ++u)
    s += reductions * grad_copy_in_s[u] + (accumulates_upcast ? upcast_s[u] + (micro_steps - 1) * accumulate_s[u] : 0.0);
  return s;
}

double Fsdp2Copies::copy_out_per_iteration_s(int micro_steps, bool backward) const
{
  double s = 0;
  for (std::size_t u = 0; u < copy_out_s.size(); ++u)
    s += micro_steps * copy_out_s[u] * (backward && u != 0 ? 2 : 1);
  return s;
}

double Fsdp2Copies::copy_in_per_iteration_s(int micro_steps, bool backward) const
{
  double s = 0;
  for (std::size_t u = 0; u < copy_in_s.size(); ++u)
    s += micro_steps * (copy_in_s[u] + (backward && u != 0 ? copy_in_backward_s[u] : 0.0));
  return s;
}

Fsdp2Copies fsdp2_copies_of(const std::vector<double>& unit_params, const std::vector<double>& unit_gather_bytes,
                            const Fsdp2CopyDtypes& bytes, int shard_ranks, int backward_ranks, bool accumulates_upcast,
                            const GpuSpec& gpu)
{
  Fsdp2Copies c;
  c.accumulates_upcast = accumulates_upcast;
  const double read = c.accumulates_upcast ? bytes.reduce : bytes.grad;  // what the gradients' copy-in reads
  for (std::size_t u = 0; u < unit_params.size(); ++u) {
    const double p = unit_params[u], gathered = unit_gather_bytes[u];
    c.copy_in_s.push_back(memory_bound_seconds(p / shard_ranks * bytes.sharded + gathered / shard_ranks, gpu));
    c.copy_in_backward_s.push_back(backward_ranks < shard_ranks ? copy_seconds(gathered / backward_ranks, gpu)
                                                                : c.copy_in_s.back());
    c.copy_out_s.push_back(copy_seconds(gathered, gpu));
    c.grad_copy_in_s.push_back(memory_bound_seconds(p * (read + bytes.reduce), gpu));
    c.upcast_s.push_back(memory_bound_seconds(p * (bytes.grad + bytes.reduce), gpu));
    c.accumulate_s.push_back(memory_bound_seconds(p * (bytes.grad + 2 * bytes.reduce), gpu));
  }
  return c;
}

std::string fsdp2_copies_note(double copy_out_s, bool backward, double gradients_s, double copy_in_s)
{
  return fmt::format("FSDP2's copies on the compute stream, per iteration: copy-out of gathered parameters {:.2f} ms "
                     "(before forward{}), gradients into the reduce dtype's buffers {:.2f} ms; beside it, on the "
                     "copy-in stream, each shard into its AllGather's input {:.2f} ms",
                     copy_out_s * 1e3, backward ? " and backward" : "", gradients_s * 1e3, copy_in_s * 1e3);
}

std::string fsdp1_cast_note(const std::string& sharded, const std::string& gathered, double copy_in_s)
{
  return fmt::format("FSDP1's low-precision shards: each {} shard cast to {} before its AllGather, on the pre-unshard "
                     "stream beside compute, {:.2f} ms per iteration",
                     sharded, gathered, copy_in_s * 1e3);
}

}  // namespace dtsim
