// The whole data flow for one scenario: cluster -> topology graph, model -> layer table, strategy
// -> task graph of a few iterations, engine -> spans, analysis -> figures.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/report/results.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <vector>

namespace dtsim {

struct Prediction {
  Topology topology;
  Plan plan;
  std::vector<Span> spans;
  RunResult result;
};

/// Throws InputError for anything wrong in the scenario (or the files it names).
Prediction predict(const Scenario& scenario);

/// The steps of predict() before the simulation: topology (with the cluster's calibration) and
/// plan, for the scenario -> plan fuzz target. Throws InputError like predict().
Prediction plan_scenario(const Scenario& scenario);

/// What predict() refuses before it simulates, with nothing simulated: the topology, the calibration,
/// the model and the plan, built as predict() builds it (ranks folded where it folds them). For the
/// points of `sweep --emit`, which run elsewhere. Throws InputError like predict().
void check_plan(const Scenario& scenario);

/// Every GPU's peak device memory and the host's offloaded share, from the scenario's plan alone.
struct PlannedMemory {
  double device_bytes = 0;  ///< the busiest GPU's device memory (allocator's segments + CUDA context)
  bool fits = true;         ///< every GPU fits its memory, and the host the state offloaded to it
  bool host_fits = true;    ///< the host holds the state offloaded to it (true where it gives no memory)
};

/// Builds the plan as predict() does (ranks folded where it folds them) and reads its memory, as
/// `run` reports it. Throws InputError where predict() would refuse the scenario.
PlannedMemory planned_memory(const Scenario& scenario);

}  // namespace dtsim
