// The causality invariant of a simulated (or hand-scheduled) task graph: no task starts before
// every task it depends on has finished, and no transfer of a collective leaves its sending rank
// before that rank joined the collective (Task::sender_joined). Knows nothing of SimGrid.
#pragma once

#include "sim/plan/task_graph.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace dtsim {

struct CausalityReport {
  int transfers_checked = 0;   ///< transfers that name their sender's join
  int violations = 0;          ///< tasks that started early (either rule)
  double worst_early_s = 0;    ///< how much the earliest of them was early
  std::vector<std::string> examples;  ///< the first few, readable
  bool ok() const { return violations == 0; }
};

/// Checks `spans` (one per task of `graph`) against both rules, with `tolerance_s` for rounding.
CausalityReport check_causality(const TaskGraph& graph, const std::vector<Span>& spans, double tolerance_s = 1e-9);

/// Start and end of every task when each runs as soon as its dependencies allow, alone on the
/// machine, taking `seconds_of(task id)`: a contention-free schedule for checking the graph's
/// dependencies without SimGrid.
template <class Seconds>
std::vector<Span> earliest_schedule(const TaskGraph& graph, Seconds seconds_of)
{
  std::vector<Span> spans(static_cast<std::size_t>(graph.size()));
  for (int id = 0; id < graph.size(); ++id) {  // tasks only depend on earlier tasks
    double start = 0;
    for (int dep : graph[id].after)
      start = std::max(start, spans[static_cast<std::size_t>(dep)].end);
    spans[static_cast<std::size_t>(id)] = {start, start + seconds_of(id)};
  }
  return spans;
}

}  // namespace dtsim
