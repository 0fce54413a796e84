// The process groups of an FSDP run over `data` x `tensor` ranks, as rank indices (r = d * T + t;
// torchtitan's mesh puts the tensor dimension innermost):
// - `shard`: the ranks a parameter is sharded over, `shard_ranks` consecutive data ranks at one
//   tensor rank; `backward`: those cut into groups of `backward_ranks` (the backward AllGather's
//   world after a reshard to fewer ranks, reshard_after_forward an int; the shard groups otherwise);
// - `replicate`: HSDP's replicas, the data ranks at one position in every shard group (empty with
//   a single shard group);
// - `tensor`: each data rank's tensor ranks;
// - `reduce`: without sharding, every data rank at one tensor rank (NO_SHARD's AllReduce; empty
//   when sharded or with one data rank).
#pragma once

#include <vector>

namespace dtsim {

struct FsdpGroups {
  std::vector<std::vector<int>> shard, backward, replicate, tensor, reduce;
};

FsdpGroups fsdp_groups(int data, int tensor, int shard_ranks, int backward_ranks, bool sharded);

}  // namespace dtsim
