// See fsdp_groups.hpp.
#include "sim/strategies/fsdp_groups.hpp"

namespace dtsim {

FsdpGroups fsdp_groups(int data, int tensor, int shard_ranks, int backward_ranks, bool sharded)
{
  const int D = data, T = tensor, S = shard_ranks, K = backward_ranks;
  const auto rank = [T](int d, int t) { return d * T + t; };
  FsdpGroups groups;
  for (int b = 0; b < D / S; ++b)
    for (int t = 0; t < T; ++t) {
      std::vector<int> grp;
      for (int j = 0; j < S; ++j)
        grp.push_back(rank(b * S + j, t));
      groups.shard.push_back(grp);
      for (int c = 0; c < S / K; ++c)
        groups.backward.emplace_back(grp.begin() + c * K, grp.begin() + (c + 1) * K);
    }
  if (D / S > 1)
    for (int j = 0; j < S; ++j)
      for (int t = 0; t < T; ++t) {
        std::vector<int> grp;
        for (int b = 0; b < D / S; ++b)
          grp.push_back(rank(b * S + j, t));
        groups.replicate.push_back(grp);
      }
  for (int d = 0; d < D; ++d) {
    std::vector<int> grp;
    for (int t = 0; t < T; ++t)
      grp.push_back(rank(d, t));
    groups.tensor.push_back(grp);
  }
  if (!sharded && D > 1)
    for (int t = 0; t < T; ++t) {
      std::vector<int> grp;
      for (int d = 0; d < D; ++d)
        grp.push_back(rank(d, t));
      groups.reduce.push_back(grp);
    }
  return groups;
}

}  // namespace dtsim
