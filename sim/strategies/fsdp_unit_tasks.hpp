// The tasks FSDP adds for one unit at a time (fsdp.cpp builds the iteration around them): its
// AllGather, behind the rate limiter that holds at most two ahead of the frees, and what prepares
// the gather's input (the shard from the host under CPU offload, FSDP2's copy-in or FSDP1's cast
// into the low-precision shard); and its gradient reduction (ReduceScatter, HSDP's AllReduce across
// the replicas, NO_SHARD's AllReduce) with FSDP1's passes around it (fsdp1_grad_passes.hpp) and the
// reduced shard's copy to the host under CPU offload (fsdp_cpu_offload.hpp).
#pragma once

#include "sim/strategies/fsdp1_grad_passes.hpp"
#include "sim/strategies/fsdp2_copies.hpp"
#include "sim/strategies/fsdp_groups.hpp"
#include "sim/strategies/fsdp_units.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharded_run.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/topology/topology.hpp"

#include <deque>
#include <string>
#include <vector>

namespace dtsim {

/// What the unit tasks read; every reference must outlive the FsdpUnitTasks.
struct FsdpUnitTaskInputs {
  const FsdpOptions& opt;
  const ShardUnits& su;
  const FsdpGroups& groups;
  const FsdpUnitBytes& bytes;
  const Fsdp2Copies& copies;     ///< copy_in_s, copy_in_backward_s read where copies_in
  const Fsdp1GradPasses& passes; ///< read where fsdp1_passes
  const Topology::Host& host;
  int shard_ranks = 1;           ///< S
  int backward_ranks = 1;        ///< K: the backward AllGather's world
  int node_ranks = 1;            ///< processes on a node (the host's gradient additions)
  double sharded_bytes = 4;      ///< per element of the shards (the host copies' dtype)
  bool sharded = true;           ///< parameters sharded over more than one rank
  bool limited = true;           ///< the rate limiter runs (FSDP2, FSDP1's limit_all_gathers)
  bool copies_in = false;        ///< a copy-in (FSDP2) or cast (FSDP1) before each AllGather
  bool fsdp1_cast = false;       ///< that is FSDP1's cast into the low-precision shard
  bool fsdp1_pre_unshard = false;  ///< FSDP1's pre-unshard stream runs ahead of the limiter
  bool fsdp1_passes = false;     ///< FSDP1's gradient passes around each reduction
};

class FsdpUnitTasks {
public:
  /// `ranks`: the plan's ranks (each gets a queue of the limiter's free events).
  FsdpUnitTasks(ShardedRun& run, const FsdpUnitTaskInputs& in, int ranks);

  /// The iteration being built: only the first's host copies are counted.
  void set_iteration(int iteration) { building_ = iteration; }
  /// Unit u's AllGather (`backward`: again for backward, over the backward groups where smaller),
  /// after what prepares its input; `kept`: gathered since an earlier no_sync micro-step. Returns
  /// per rank the task after which the unit is gathered (empty: nothing to wait for).
  std::vector<int> gather(int u, bool backward, const std::string& when, bool kept = false);
  /// The limiter's next free event on each rank: `tasks` (per rank).
  void free_after(const std::vector<int>& tasks);
  /// Unit u's gradient reduction in micro-step m, once its gradients are computed.
  void reduce(int u, int m);

  /// Per rank, in the first iteration: the offload's copies to the GPU and to the host, bytes.
  double h2d_bytes() const { return h2d_bytes_; }
  double d2h_bytes() const { return d2h_bytes_; }

private:
  void limit(std::vector<std::vector<int>>& start);
  void offload_gradient(int u, int m, ShardedRun::Stream stream, const std::vector<int>& done);

  ShardedRun& run_;
  FsdpUnitTaskInputs in_;
  std::vector<std::deque<int>> frees_;  // per rank: the limiter's free events (tasks)
  double h2d_bytes_ = 0, d2h_bytes_ = 0;
  int building_ = 0;
};

}  // namespace dtsim
