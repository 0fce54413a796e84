// How much of each kind of collective compute hid: per category of communication task (allgather,
// reduce-scatter, allreduce, tensor-parallel, ...), the time one of them was in flight on one GPU
// (device_communication.hpp: a collective from its last rank's join to the GPU's result), and the
// part of it that set the iteration's length (its share of the critical path, critical_path.hpp):
// the rest ran beside compute or beside a longer step.
// Per steady-state iteration. Sharded data parallelism reports it for its first GPU (every rank
// runs the same schedule).
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/report/critical_path.hpp"
#include "sim/strategies/plan.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct CommOverlap {
  TaskCategory category = TaskCategory::None;
  double in_flight_s = 0;  ///< per iteration: time with one of them in flight on the GPU
  double exposed_s = 0;    ///< per iteration: its time on the critical path
};

/// For `device` (a GPU of the plan), with each category's time on `critical` (per iteration),
/// in order of exposed time (largest first); categories in flight less than `least_s` are left out.
std::vector<CommOverlap> comm_overlap_on(const Plan& plan, const std::vector<Span>& spans, int device,
                                         const std::vector<CriticalPart>& critical, double least_s);

}  // namespace dtsim
