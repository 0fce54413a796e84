// What a strategy hands to the engine and the report: the task graph of a few training iterations
// plus what is needed to read the simulated spans back (iteration boundaries, compute per GPU).
#pragma once

#include "sim/engine/task_graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

struct CommGroup {
  std::string label;   ///< "bucket 0", "replicate", ...
  std::string op;      ///< "all_reduce", "broadcast", ...
  double bytes = 0;
};

struct Plan {
  TaskGraph graph;
  std::vector<int> ranks;               ///< device indices of the GPUs used
  std::vector<int> iteration_end;       ///< per simulated iteration: the task that closes it
  int setup_end = -1;                   ///< task closing the one-off set-up (e.g. parameter broadcast)
  int warmup_iterations = 1;            ///< iterations not used for the steady-state figure
  double compute_per_iteration_s = 0;   ///< busiest GPU's compute time in one iteration
  double single_gpu_iteration_s = 0;    ///< one GPU alone doing the same per-GPU work
  double samples_per_iteration = 0;     ///< global batch
  std::vector<CommGroup> comm_per_iteration;  ///< the collectives of one steady-state iteration
  std::vector<std::string> notes;       ///< modelling assumptions to show in the report
};

}  // namespace dtsim
