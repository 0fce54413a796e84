// `--trace FILE`: the simulated spans as Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing), each event built with nlohmann::json and written one per line.
//  - One process per node ("node 0"), and one for the network fabric (switches) when a link
//    direction leaves a fabric device.
//  - In a node's process, per device that did work: a "compute" thread (compute, launch and
//    protocol delays) and a "sends" thread (each transfer it sends, with bytes, source and
//    destination), then one thread per link direction leaving the node with every transfer crossing
//    it. Spans that overlap on one thread are laid out on numbered lanes ("n0.gpu0 sends (2)") so
//    that each lane is a proper timeline.
//  - A flow arrow from each transfer to its receive: the first task on the destination device that
//    waited for it (through zero-length joins), so arrows follow the data from GPU to GPU.
//  - A counter per busy link direction: its utilisation in percent, the sum over the transfers in
//    flight of their mean rate (bytes / duration) over the link's bandwidth, capped at 100 (the
//    mean rate stands for max-min sharing's rate, which changes within a transfer).
//  - Only the chosen iterations (TraceOptions), so that a trace of many GPUs stays small.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct TraceOptions {
  int first_iteration = 0;   ///< first simulated iteration kept (0-based, as Task::iteration)
  int last_iteration = -1;   ///< last kept; -1: through the last simulated one
  int setup_end = -1;        ///< tasks up to this id are the one-off set-up: kept with iteration 0
};

/// The trace as JSON text, one event per line; the selection is recorded in "otherData".
std::string chrome_trace(const Topology& topology, const TaskGraph& graph, const std::vector<Span>& spans,
                         const TraceOptions& options = {});

/// `--trace-iterations`: "all" (every simulated iteration and the set-up), "K" (the last K
/// iterations) or "A-B" (iterations A to B, 0-based, as "iteration N done" in the trace). Throws
/// InputError naming `--trace-iterations` and the number of simulated iterations.
TraceOptions trace_options(const std::string& spec, const Plan& plan);

}  // namespace dtsim
