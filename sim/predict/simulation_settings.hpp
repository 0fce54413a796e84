// The scenario's `simulation` member, read once: how many iterations run, whether collectives are
// simulated transfer by transfer or replayed, and whether every rank is simulated or representatives.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim {

/// How collectives are simulated (simulation.collectives): each transfer of each one in the whole
/// run ("full"), or each distinct one once on its own and replayed (collective_replay.hpp:
/// "replay"); "auto" replays plans of more than kReplayAboveTransfers transfers.
enum class CollectiveMode { Auto, Full, Replay };

/// Which GPUs the plan simulates (simulation.ranks): every one ("all"), or one representative of
/// each set of GPUs that run the same schedule, their communications timed on their own
/// (folded_comms.hpp: "representatives"); "auto" folds from 64 GPUs on, and large FSDP runs below (auto_folds).
enum class RankMode { Auto, All, Representatives };

struct SimulationSettings {
  int iterations = 4;
  int warmup = 1;
  bool iterations_given = false;  ///< the scenario sets simulation.iterations: all of them run
  CollectiveMode collectives = CollectiveMode::Auto;
  RankMode ranks = RankMode::Auto;
};

// Where "auto" starts replaying: the full run's cost is about 10 us of CPU per transfer on this
// project's 2-core machine (tools/bench-scale: 1,024-GPU DDP, ~1.5 M transfers, 16 s), so plans of
// more than 100,000 transfers (~1 s; 64 x 8 GPUs and up for ResNet-50 DDP) are replayed. Every
// scenario and golden of the test suite stays below it and runs in full.
inline constexpr int kReplayAboveTransfers = 100000;

// In "auto", the collectives of at least this many tasks start their isolated runs while the plan
// is still being built (IsolatedRunPool): a tenth of kReplayAboveTransfers, so that a plan that
// will be replayed gets its large collectives simulated on the core the plan building leaves free,
// and a smaller plan rarely starts one (when it does, the run is killed unused).
inline constexpr int kEarlyRunAboveTasks = kReplayAboveTransfers / 10;

/// simulation.iterations, warmup, collectives and ranks; InputError at /simulation otherwise.
SimulationSettings parse_simulation_settings(const Scenario& s);

/// Whether simulation.ranks "auto" folds this run's ranks (folded_comms.hpp).
bool auto_folds(const Scenario& s, const Model& model);

}  // namespace dtsim
