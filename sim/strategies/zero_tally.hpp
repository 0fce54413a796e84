// The tasks of a ZeRO plan that its per-iteration figures count: each collective and each of
// ZeRO-Offload's copies between a GPU and its host (zero_offload.hpp), added to the plan's
// ShardedRun and, while the first iteration is built, tallied per (what, collective, groups it runs
// on at once): the bytes of one group's calls and their count.
#pragma once

#include "sim/strategies/plan.hpp"
#include "sim/strategies/sharded_run.hpp"
#include "sim/strategies/zero_quantized_gradients.hpp"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace dtsim {

class ZeroTally {
public:
  /// `gpus`: the ranks each host copy runs on at once.
  ZeroTally(ShardedRun& run, int gpus) : run_(run), gpus_(gpus) {}

  ShardedRun& run() { return run_; }
  /// The iteration being built: only the first is tallied.
  void set_iteration(int iteration) { iteration_ = iteration; }
  bool first_iteration() const { return iteration_ == 0; }

  /// ShardedRun::collective, tallied under `what`.
  std::vector<int> collective(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes, const std::string& label,
                              const std::string& what, TaskCategory category, std::vector<std::vector<int>> start,
                              ShardedRun::Stream stream = ShardedRun::Stream::Shard, int root = 0);
  /// The same, as reduce_quantized takes it.
  ZeroCollective collective_fn();
  /// ShardedRun::host_copy on every rank, tallied as "`what` (ZeRO-Offload)".
  std::vector<int> offload_copy(std::optional<ShardedRun::Stream> stream, double bytes, bool to_host, bool pinned,
                                const std::string& what, const std::string& label);
  /// Appends the tally to `out`, in its keys' order.
  void add_to(std::vector<CommGroup>& out) const;

private:
  void count(const std::string& what, const std::string& op, int groups, double bytes);

  ShardedRun& run_;
  int gpus_ = 1;
  int iteration_ = 0;
  std::map<std::tuple<std::string, std::string, int>, std::pair<double, int>> tally_;
};

}  // namespace dtsim
