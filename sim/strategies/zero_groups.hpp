// The process groups of a DeepSpeed ZeRO run over `gpus` data-parallel ranks (rank indices 0 ..
// gpus - 1, consecutive ranks on one node), as DeepSpeed makes them:
// - `all`: every rank (stages 1-2, and stage 3 without MiCS);
// - `shard`: stage 3's partition groups, MiCS's groups of mics_shard_size consecutive ranks
//   (mics_utils.py create_mics_comm_groups), and `replicas`, the ranks at one position in every
//   such group (empty without MiCS);
// - `secondary`: ZeRO++ hpZ's groups of zero_hpz_partition_size consecutive ranks (groups.py
//   _create_zero_param_parallel_group; the shard groups without hpZ);
// - `inside_nodes` and `across_nodes`: ZeRO++ qgZ's all-to-all groups, each node's ranks and the
//   ranks at one position on every node (groups.py _get_local_all_to_all_group).
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/strategies/sharding_options.hpp"

#include <vector>

namespace dtsim {

struct ZeroGroups {
  int shard_size = 1;       // S: ranks a partition is spread over
  int secondary_size = 1;   // H: hpZ's group (S without hpZ)
  int per_node = 1;         // ranks on each node
  std::vector<std::vector<int>> all, shard, replicas, secondary, inside_nodes, across_nodes;
};

/// Errors (exit 2) name the member: a MiCS or hpZ size that does not divide the ranks, qgZ over
/// ranks that are not whole nodes.
ZeroGroups zero_groups(const Scenario& scenario, const ZeroOptions& opt, int gpus, int per_node);

}  // namespace dtsim
