// Whether a replayed collective (collective_replay.hpp) shared a link with other traffic while it
// ran: the replay is what the full run gives only when it did not. Checked on the replay's spans,
// per directed link: a replayed collective's window (first start to last end of its tasks) against
// every other replayed collective's window and every other transfer crossing that link.
#pragma once

#include "sim/engine/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// The directed links (directed_link) a collective's transfers cross, each once.
std::vector<int> directed_links_of(const Topology& topology, const TaskGraph& graph, const CollectiveRange& range);

struct Overlaps {
  std::vector<int> collectives;  ///< indices into the graph's collectives, each once, in order
  std::string first;             ///< the first sharing found, as one line ("" when none)
};

/// The replayed collectives that shared a directed link with other traffic while they ran (another
/// replayed collective, or any other transfer: outside collectives or of one run in full).
/// owner[task]: its collective or -1; expanded[k]: collective k runs in full (not replayed);
/// run_of[k]: the distinct collective k is a copy of; links[d]: distinct collective d's
/// directed_links_of; spans: per task of the graph.
Overlaps overlapping_collectives(const Topology& topology, const TaskGraph& graph, const std::vector<int>& owner,
                                 const std::vector<char>& expanded, const std::vector<int>& run_of,
                                 const std::vector<std::vector<int>>& links, const std::vector<Span>& spans);

}  // namespace dtsim
