// The step table of `dtsim explain`: one simulated training iteration read back as steps in the
// order they ran (load, scatter, replicate, forward, gather, ..., AllReduce of each bucket), each
// with who sends what to whom, the bytes, the links crossed and the simulated duration; plus the
// one-off set-up steps and per-GPU totals. Built from a Plan and its simulated spans.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/report/gpu_usage.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct StepRow {
  TaskCategory category = TaskCategory::None;  ///< the tasks' category (scatter, allreduce, ...)
  int group = -1;         ///< bucket / micro-batch, -1 when none
  std::string who;        ///< "GPU0 -> GPU1-3", "GPU0-3" (compute), "host -> GPU0"
  double bytes = 0;       ///< bytes put on the links (payload plus protocol overhead)
  int transfers = 0;      ///< point-to-point flows
  std::string links;      ///< link kinds crossed: "NVLink", "PCIe", "PCIe+CPU", "network"
  bool inter_gpu = false; ///< data moved from one GPU to another (the seed's star)
  double start = 0;       ///< seconds since the iteration began
  double duration = 0;
};

struct StepTable {
  std::vector<StepRow> once;   ///< set-up before the first iteration (DDP's parameter broadcast)
  std::vector<StepRow> steps;  ///< one iteration
  std::vector<GpuUsage> per_gpu;
  double iteration_s = 0;
  int inter_gpu_steps = 0;     ///< starred rows per parameter update
  int inter_gpu_transfers = 0; ///< GPU-to-GPU flows per parameter update
};

/// Rows of `iteration` (its tasks), ordered by start time.
StepTable build_step_table(const Topology& topology, const Plan& plan, const std::vector<Span>& spans, int iteration);

/// "GPU3" on one node, "n1.GPU3" on several; "host" for CPUs; the device name otherwise.
std::string short_device_name(const Topology& topology, int device);

}  // namespace dtsim
