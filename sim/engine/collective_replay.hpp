// A faster run of a TaskGraph for large machines: each distinct collective (TaskGraph::collectives,
// recognised by its content: the same transfers, delays and dependencies) is simulated once on its
// own, flow by flow on the whole topology, in a SimGrid run (a child process) of its own (isolated_runs.hpp), side by
// side with the others (one channel of each set that a rotation of the nodes' GPUs maps onto one
// another, on folded links: collective_symmetry.hpp); the graph then runs with every collective replaced by
// its replay: a join of all its ranks' start dependencies, then each rank's own time to its result
// in the isolated run. Its tasks get the isolated run's spans, shifted to that join, so traces,
// bytes and link figures stay whole.
//
// The replay is what the full run gives when (1) nothing else crosses the collective's links while
// it runs and (2) the collective starts when its last rank has joined. (1) is checked on the result
// and the replay refused when it fails; (2) is the model's approximation: ranks that join early do
// not get ahead (issue 15 measured the time from the last rank's start to a Tree bucket's end within
// 0.05% of the isolated collective; the cross-check test bounds the difference on whole iterations).
#pragma once

#include "sim/engine/isolated_runs.hpp"
#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct ReplayedRun {
  bool applied = false;     ///< false: the full run is needed (see `why_not`); spans are then empty
  std::string why_not;      ///< one line: what made the replay not apply
  std::vector<Span> spans;  ///< per task of the graph, as simulate() returns them
  int collectives = 0;      ///< collective instances in the graph
  int distinct = 0;         ///< of which simulated (the others are copies of one of them)
  int folded = 0;           ///< distinct collectives folded by a symmetry (collective_symmetry.hpp)
  int expanded = 0;         ///< collectives run in full among the others (they shared links); then
                            ///< `why_not` says with what, first
  long long distinct_tasks = 0;  ///< tasks of the distinct collectives
  long long isolated_tasks = 0;  ///< of which simulated (one per orbit where folded)
};

struct ReplayOptions {
  /// Fold each distinct collective by its symmetry where it has one (collective_symmetry.hpp);
  /// false runs every task of it (how the tests check the fold).
  bool fold = true;
};

/// Runs `graph` with its collectives replayed (see above). A collective that shared a link with
/// other traffic (another collective, an input copy) while it ran is run flow by flow among the
/// others instead, and the check repeated, for a few rounds. Refuses (applied = false) when the
/// graph has no collective, a task outside a collective waits on one of its inner tasks, every
/// collective had to be run in full, or sharing was still found after the last round.
/// The isolated runs go through `pool` when given (it may have started some while the plan was
/// being built), else through one of its own.
ReplayedRun simulate_with_replayed_collectives(const Topology& topology, const TaskGraph& graph,
                                               const ReplayOptions& options = {}, IsolatedRunPool* pool = nullptr);

}  // namespace dtsim
