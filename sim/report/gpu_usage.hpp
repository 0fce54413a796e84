// Per-GPU figures of the measured iterations: bytes each GPU sent and received, its busy (computing)
// and idle time, and its memory; these show DataParallel's hub (GPU0) and a pipeline's bubble. A
// folded plan's row stands for the GPUs its representative stands for.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct GpuUsage {
  std::string device;       ///< topology name, e.g. "n0.gpu3"
  double bytes_sent = 0;    ///< per iteration
  double bytes_received = 0;
  double busy_s = 0;        ///< computing, per iteration
  double idle_s = 0;        ///< iteration time - busy
  /// Folded plan: how many GPUs this simulated GPU stands for; its busy time is their mean (it ran
  /// at the pace of the slowest of them). 1 otherwise.
  int stands_for = 1;
};

struct GpuMemoryRow {
  std::string devices;      ///< "n0.gpu0" or "n0.gpu1 .. n0.gpu7" (identical rows merged)
  GpuMemory memory;
  bool fits = true;
};

/// Mean over the measured iterations (those >= plan.warmup_iterations).
std::vector<GpuUsage> gpu_usage(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                                double iteration_time_s);

/// The plan's per-GPU memory, consecutive identical GPUs merged.
std::vector<GpuMemoryRow> memory_rows(const Topology& topology, const Plan& plan);

}  // namespace dtsim
