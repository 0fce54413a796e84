// Collectives called again with the same arguments (a DDP bucket's AllReduce in every iteration, the
// buffers' broadcast before each forward) expand into the same tasks every time: only their ranks'
// start dependencies differ. The memo remembers where in the graph each expansion was added and
// appends a copy of those tasks instead of expanding again (routes, NCCL's choice, task names),
// which is most of building a large plan. It keeps no tasks of its own (at 16,384 GPUs the distinct
// expansions are millions of tasks): a remembered expansion's tasks must not change once added.
#pragma once

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_params.hpp"
#include "sim/collectives/nccl_tuning.hpp"

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dtsim {

struct CollectiveOptions;

/// Everything an expansion depends on besides its ranks' start dependencies.
struct ExpansionKey {
  const Topology* topology = nullptr;
  CollectiveCall call;
  NcclFilter filter;
  std::optional<NcclParams> params;
  bool ideal = false;
  int gpus_per_thread = 1;
  int group = -1;  ///< the graph's group when added (every task carries it)

  bool operator==(const ExpansionKey& other) const;
};

class ExpansionMemo {
public:
  static ExpansionKey key_of(const TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                             const CollectiveOptions& options);
  /// Appends a copy of the expansion of `key` remembered in this graph, its rank r's start-up
  /// waiting on start_after[r]; nothing when none is remembered.
  std::optional<CollectiveTasks> append_copy(TaskGraph& graph, const ExpansionKey& key,
                                             const std::vector<std::vector<int>>& start_after);
  /// Remembers the collective just added at [first, graph.size()), if its tasks are its ranks'
  /// start-ups (the first ones, one per rank, waiting on start_after) and tasks that wait only on
  /// tasks of its own: then a copy with other start dependencies is the same expansion.
  void remember(const TaskGraph& graph, ExpansionKey key, int first, const std::vector<std::vector<int>>& start_after,
                const CollectiveTasks& added);
  /// Collectives appended as copies so far.
  int copies() const { return copies_; }

private:
  struct Entry {
    ExpansionKey key;
    const TaskGraph* graph = nullptr;  ///< where it was added, tasks [first, end), its ranks' start-ups first
    int first = 0;
    int end = 0;
    std::size_t ranks = 0;
    CollectiveTasks result;  ///< as added (done in the graph's ids)
  };
  static std::size_t hash(const ExpansionKey& key);
  std::unordered_map<std::size_t, std::vector<Entry>> entries_;
  int copies_ = 0;
};

}  // namespace dtsim
