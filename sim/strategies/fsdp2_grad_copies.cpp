// See fsdp2_grad_copies.hpp.
#include "sim/strategies/fsdp2_grad_copies.hpp"

#include "sim/strategies/optimizer_step.hpp"

namespace dtsim {

double Fsdp2GradCopies::per_iteration_s(int reductions, int micro_steps) const
{
  double s = 0;
  for (std::size_t u = 0; u < copy_in_s.size(); ++u)
    s += reductions * copy_in_s[u] + (accumulates_upcast ? upcast_s[u] + (micro_steps - 1) * accumulate_s[u] : 0.0);
  return s;
}

Fsdp2GradCopies fsdp2_grad_copies(const std::vector<double>& unit_params, double grad_bytes, double reduce_bytes,
                                  bool accumulates_upcast, const GpuSpec& gpu)
{
  Fsdp2GradCopies c;
  c.accumulates_upcast = accumulates_upcast;
  const double read = c.accumulates_upcast ? reduce_bytes : grad_bytes;  // what the copy-in reads
  for (const double p : unit_params) {
    c.copy_in_s.push_back(memory_bound_seconds(p * (read + reduce_bytes), gpu));
    c.upcast_s.push_back(memory_bound_seconds(p * (grad_bytes + reduce_bytes), gpu));
    c.accumulate_s.push_back(memory_bound_seconds(p * (grad_bytes + 2 * reduce_bytes), gpu));
  }
  return c;
}

}  // namespace dtsim
