// See fsdp1_grad_passes.hpp.
#include "sim/strategies/fsdp1_grad_passes.hpp"

#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/sharding_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dtsim {

double gradient_predivide_factor(int world_size)
{
  int factor = 1;  // default_hooks.py DefaultState._get_gradient_predivide_factor
  while (world_size % factor == 0 && world_size / factor > factor)
    factor *= 2;
  return factor;
}

double Fsdp1GradPasses::per_iteration_s(int reductions, int micro_steps) const
{
  double s = 0;
  for (std::size_t u = 0; u < before_s.size(); ++u)
    s += reductions * (before_s[u] + after_s[u]) + (reductions == micro_steps ? (micro_steps - 1) * accumulate_s[u] : 0.0);
  return s;
}

Fsdp1GradPasses fsdp1_grad_passes(const std::vector<double>& unit_params, const Fsdp1GradDtypes& dtypes, int reduce_world,
                                  int shard_ranks, int replicas, const GpuSpec& gpu)
{
  Fsdp1GradPasses p;
  p.predivide = gradient_predivide_factor(reduce_world);
  p.postdivide = reduce_world / p.predivide;
  p.cast_before = dtypes.grad != dtypes.reduce ? dtypes.reduce : "";
  p.cast_after = dtypes.reduce != dtypes.sharded ? dtypes.sharded : "";
  p.sharded = shard_ranks > 1;
  const double g = dtype_bytes(dtypes.grad), r = dtype_bytes(dtypes.reduce), s = dtype_bytes(dtypes.sharded);
  // Per element of the unsharded gradient, then of the shard: bytes read plus written.
  const double before = (p.cast_before.empty() ? 0.0 : g + r) + (p.predivide > 1 ? 2 * r : 0.0);
  const double replica_pre = gradient_predivide_factor(replicas);
  double after = p.postdivide > 1 ? 2 * r : 0.0;
  if (replicas > 1)
    after += (replica_pre > 1 ? 2 * r : 0.0) + (replicas / replica_pre > 1 ? 2 * r : 0.0);
  if (!p.cast_after.empty())
    after += r + s;
  for (const double params : unit_params) {
    const double shard = params / shard_ranks;
    p.before_s.push_back(memory_bound_seconds(params * before, gpu));
    p.after_s.push_back(memory_bound_seconds(shard * after, gpu));
    p.accumulate_s.push_back(shard_ranks > 1 ? memory_bound_seconds(shard * 3 * s, gpu) : 0.0);
  }
  return p;
}

std::string fsdp1_grad_passes_note(const Fsdp1GradPasses& passes, double per_iteration_s, bool accumulates)
{
  std::vector<std::string> before, after;
  if (!passes.cast_before.empty())
    before.push_back("cast to " + passes.cast_before);
  if (passes.predivide > 1)
    before.push_back(fmt::format("divided by {:g}", passes.predivide));
  if (passes.postdivide > 1)
    after.push_back(fmt::format("divided by {:g}", passes.postdivide));
  if (!passes.cast_after.empty())
    after.push_back("cast to " + passes.cast_after);
  if (accumulates)
    after.push_back("added to the earlier micro-steps'");
  return fmt::format("FSDP1's passes over the gradients on the post-backward stream: {:.2f} ms per iteration (each unit's "
                     "gradient {} before its reduction{}), sharing the GPU with the backward beside them; the next "
                     "unit's wait for that reduction",
                     per_iteration_s * 1e3, before.empty() ? std::string("untouched") : fmt::format("{}", fmt::join(before, " and ")),
                     after.empty() ? std::string()
                                   : fmt::format(", its {} {} after it", passes.sharded ? "shard" : "sum", fmt::join(after, ", ")));
}

}  // namespace dtsim
