// The isolated runs of the replay (collective_replay.hpp): each distinct collective of a plan
// simulated on its own, folded by its symmetry where it has one (collective_symmetry.hpp), in a
// SimGrid run of its own, that is a child process of its own. A pool runs them side by side as soon
// as there is a core for them: while the plan is still being built (on the cores its building
// leaves free: it offers each collective as it is added), then in the replay, the one with the most
// tasks to simulate first.
#pragma once

#include "sim/engine/collective_symmetry.hpp"
#include "sim/engine/engine.hpp"
#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtsim {

/// A hash of what makes a collective run the way it does on its own: its tasks in order, their
/// devices, sizes and durations, and their dependencies among themselves (those on earlier tasks
/// all count as the start).
std::size_t collective_content_hash(const TaskGraph& graph, const CollectiveRange& range);

/// One collective's isolated run: its spans from its own start, every task with its
/// representative's, and how many tasks SimGrid ran (fewer than the range's where folded).
struct IsolatedRun {
  std::vector<Span> offsets;
  long long simulated = 0;
};

class IsolatedRunPool {
public:
  /// `fold`: fold by symmetry (false: every task runs). Collectives offered while the plan is built
  /// run early when they have at least `early_min_tasks` tasks.
  IsolatedRunPool(const Topology& topology, bool fold, int early_min_tasks);

  /// For the plan builder (CollectiveOptions::on_collective): `graph`'s collective `collective`
  /// was just added, `expanded` anew (not a memo's copy). Queues it to run early if it is large
  /// enough, collects the runs done and starts queued ones on the lanes the building leaves free
  /// (simulation_lanes() - 1), the largest first; folded in its child.
  void offer(const TaskGraph& graph, int collective, bool expanded);

  /// For the replay, once the plan is built: drops the early runs not started (their graph was the
  /// plan under construction), and from now on runs on every lane.
  void plan_built();
  /// From now on runs on every lane, keeping what is queued (the plan that queued it is built).
  void use_every_lane() { lanes_ = simulation_lanes(); }
  /// Whether `graph`'s collective `collective` was started, on the same tasks as now.
  bool has(const TaskGraph& graph, int collective) const;
  /// Queues `graph`'s collective `collective`, folded by `fold` (weight: its representatives), and
  /// starts what the free lanes take.
  void run(const TaskGraph& graph, int collective, const CollectiveFold& fold);
  /// The run of collective `collective` (waits for it, starting queued runs as lanes free up).
  IsolatedRun take(int collective);

private:
  struct Queued {
    int collective = 0;
    double weight = 0;
    const TaskGraph* graph = nullptr;
    std::optional<CollectiveFold> fold;  ///< empty: folded in the child
  };
  struct Run {
    int first = 0;
    int end = 0;
    std::size_t hash = 0;
    std::optional<ChildJob> job;  ///< while it runs
    std::string result;           ///< once done
  };
  void collect_done();
  void start_queued();
  void wait_for_any();

  const Topology& topology_;
  bool fold_ = true;
  int early_min_tasks_ = 0;
  int lanes_ = 1;
  std::vector<Queued> queued_;
  std::unordered_map<int, Run> runs_;
};

}  // namespace dtsim
