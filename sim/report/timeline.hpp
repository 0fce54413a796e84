// What the HTML report draws from the simulated spans: the Gantt rows of one steady-state
// iteration (per shown GPU: compute, and the transfers it sends or receives from the host; per busy
// link: the transfers crossing it) and the utilisation of every link over the measured iterations.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct TimelineBlock {
  double start = 0, end = 0;  ///< seconds from the start of the drawn iteration
  TaskCategory category = TaskCategory::None;  ///< colour (forward, allreduce, ...)
  std::string label;          ///< tooltip: task name(s)
};

struct TimelineRow {
  std::string label;          ///< "n0.gpu0 compute", "NVLink n0.gpu0 -> n0.gpu1"
  bool gpu_compute = false;   ///< gaps are drawn as idle
  std::vector<TimelineBlock> blocks;
};

struct Timeline {
  int iteration = 0;          ///< which simulated iteration is drawn
  double start_s = 0;         ///< its absolute start
  double length_s = 0;
  std::vector<TimelineRow> rows;
  int gpus_total = 0, gpus_shown = 0, links_busy = 0, links_shown = 0;
  int folded_from_gpus = 0;   ///< > 0: the plan's ranks were folded (its collectives drawn on their GPU's row, on no link)
};

struct TimelineOptions {
  std::vector<int> gpu_ranks;  ///< ranks to draw (positions in plan.ranks); empty: the first 8, or with
                               ///< pipeline stages the first GPU of each (up to 16): the schedule
  int max_links = 16;          ///< busiest links (carrying the shown GPUs' transfers) drawn
  double resolution_s = 0;     ///< blocks of one category closer than this merge (0: length / 2000)
};

/// The last simulated iteration, between the end of the one before and its own end.
Timeline build_timeline(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                        const TimelineOptions& options = {});

struct LinkUse {
  std::string name;           ///< "NVLink n0.gpu0 -> n0.gpu1"
  std::string kind;
  double bandwidth = 0;       ///< bytes/s in this direction
  double bytes_per_iteration = 0;
  double busy_fraction = 0;   ///< share of the iteration with a transfer in flight
  double utilisation = 0;     ///< bytes / (bandwidth x iteration time)
};

/// Every link direction that carried bytes in the measured iterations, busiest first.
std::vector<LinkUse> link_utilisation(const Topology& topology, const Plan& plan, const std::vector<Span>& spans,
                                      double iteration_time_s);

}  // namespace dtsim
