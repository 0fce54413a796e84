// What set an iteration's length: the chain of tasks, walked back from the iteration's end through
// the dependency that finished last, each task's time on it summed by kind of step (its category).
// In the simulation a task starts when its last dependency ends, so the chain covers the iteration
// from the previous iteration's end without a gap, and its parts add up to the iteration time.
#pragma once

#include "sim/strategies/plan.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct CriticalPart {
  TaskCategory category = TaskCategory::None;  ///< forward, backward, allreduce, load, ...
  double seconds = 0;    ///< mean per measured iteration
};

/// Mean over the measured iterations (after the warm-up), largest first.
std::vector<CriticalPart> critical_path_by_category(const Plan& plan, const std::vector<Span>& spans);

}  // namespace dtsim
