// A GPU's communication as spans of time: each communication task on it, and for each collective it
// is in, the time from when its last rank joined (the last start-up's end: from then on it runs for
// every rank) to when the GPU has the result. A collective's own tasks do not all touch the GPU:
// between a rank's legs, hops between other devices run (a NIC-to-NIC flow between its PCIe legs,
// the ring steps of other GPUs), while the GPU's NCCL kernel runs all along. Counting only the tasks
// that touch it would leave a multi-node collective at its PCIe legs' time, however slow the
// network; counting from the GPU's own start-up would count its wait for the slowest rank to join.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/plan.hpp"

#include <functional>
#include <vector>

namespace dtsim {

/// One span: `task` is the task it is, or for a collective's joined span its first task on the device
/// (its iteration and category).
struct DeviceCommunication {
  int task = -1;
  Span span;
};

/// The spans of `device` among the tasks `counted` accepts (a collective's joined span when one of its
/// tasks on the device is accepted); they may overlap.
std::vector<DeviceCommunication> communication_on(const Plan& plan, const std::vector<Span>& spans, int device,
                                                  const std::function<bool(const Task&, int id)>& counted);

}  // namespace dtsim
