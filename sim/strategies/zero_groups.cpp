// See zero_groups.hpp.
#include "sim/strategies/zero_groups.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

std::vector<std::vector<int>> consecutive(int n, int size)
{
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(n / size));
  for (int r = 0; r < n; ++r)
    groups[static_cast<std::size_t>(r / size)].push_back(r);
  return groups;
}

/// The ranks at each position of the consecutive groups of `size`.
std::vector<std::vector<int>> strided(int n, int size)
{
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(size));
  for (int r = 0; r < n; ++r)
    groups[static_cast<std::size_t>(r % size)].push_back(r);
  return groups;
}

}  // namespace

ZeroGroups zero_groups(const Scenario& scenario, const ZeroOptions& opt, int gpus, int per_node)
{
  const int n = gpus;
  const auto group_size = [&](const char* key, int size) {
    if (size > n || n % size != 0)
      scenario.strategy_options().at(key).fail(
          fmt::format("expected a group size that divides the {} data-parallel GPUs, got {}", n, size));
    return size;
  };
  ZeroGroups z;
  z.shard_size = opt.mics_shard_size > 0 ? group_size("mics_shard_size", opt.mics_shard_size) : n;
  z.secondary_size = opt.hpz_partition_size > 1 ? group_size("zero_hpz_partition_size", opt.hpz_partition_size) : z.shard_size;
  if (opt.quantized_gradients && opt.stage == 3 && n % per_node != 0)
    scenario.strategy_options().at("zero_quantized_gradients").fail(
        fmt::format("expected whole nodes of {} GPUs for qgZ's all-to-alls, got {} data-parallel GPUs", per_node, n));
  z.per_node = per_node;
  z.all = consecutive(n, n);
  z.shard = consecutive(n, z.shard_size);
  z.secondary = consecutive(n, z.secondary_size);
  if (z.shard_size < n)
    z.replicas = strided(n, z.shard_size);
  if (n % per_node == 0) {
    z.inside_nodes = consecutive(n, per_node);
    z.across_nodes = strided(n, per_node);
  }
  return z;
}

}  // namespace dtsim
