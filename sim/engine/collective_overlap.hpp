// Whether a replayed collective (collective_replay.hpp) shared a link with other traffic while it
// ran: the replay is what the full run gives only when it did not. Checked on the replay's spans,
// per directed link: a replayed collective's window on that link (first start to last end of its
// transfers that cross it) against every other replayed collective's window there and every other
// transfer crossing that link.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// A directed link (directed_link) a collective's transfers cross, and when they use it: from the
/// first start to the last end of those transfers, in seconds after the collective's first start.
struct LinkWindow {
  int key = -1;
  double from = 0;
  double to = 0;
};

/// The directed links a collective's transfers cross, each once, with their windows, from the spans
/// of a run of the collective (`spans`: per task of the range, by offset from its first).
std::vector<LinkWindow> link_windows_of(const Topology& topology, const TaskGraph& graph, const CollectiveRange& range,
                                 const std::vector<Span>& spans);

struct Overlaps {
  std::vector<int> collectives;  ///< indices into the graph's collectives, each once, in order
  std::string first;             ///< the first sharing found, as one line ("" when none)
};

/// The replayed collectives that shared a directed link with other traffic while they ran (another
/// replayed collective, or any other transfer: outside collectives or of one run in full).
/// owner[task]: its collective or -1; expanded[k]: collective k runs in full (not replayed);
/// run_of[k]: the distinct collective k is a copy of; links[d]: distinct collective d's
/// link_windows_of (each replayed copy's windows shifted to its first start); spans: per task of the
/// graph.
Overlaps overlapping_collectives(const Topology& topology, const TaskGraph& graph, const std::vector<int>& owner,
                                 const std::vector<char>& expanded, const std::vector<int>& run_of,
                                 const std::vector<std::vector<LinkWindow>>& links, const std::vector<Span>& spans);

}  // namespace dtsim
