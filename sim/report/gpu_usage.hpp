// Per-GPU figures of the measured iterations: bytes each GPU sent and received, its busy (computing)
// and idle time, and its memory; these show DataParallel's hub (GPU0) and a pipeline's bubble.
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
