// Symmetry of a collective run on its own, so that SimGrid runs one channel of each orbit instead of
// every channel (issue 15, "identical rails, channels and nodes as one representative flow with its
// multiplicity on shared links").
//
// NCCL gives each channel the same work, and a rail-optimised node gives each channel the same kind
// of links: rotating the local GPUs (and NICs, and any other device kind of the node, in step) of
// every node by the same number of positions then often maps the collective onto itself, task for
// task, and its links onto links of the same rate and latency. A double binary tree's channels
// alternate between a tree over the nodes and its mirror, so there the rotation by one position
// maps the collective onto itself only with the nodes mirrored too. fold_collective() finds the
// smallest such rotation (mirrored where the plain one fails) and checks it on the tasks and on
// every route, so it never assumes a symmetry the plan or the machine does not have. The proof
// below holds for any such map of the flows onto themselves.
//
// Why the fold is exact. Run alone from one start (all ranks at once), the collective and its image
// under the rotation are the same system of flows; max-min sharing has one solution, so every flow
// runs at the rate of its images, and every task of an orbit has the same span. Keep one flow f per
// orbit (m_f flows) and fold each orbit O of directed links into one link: the copies of f cross the
// links of O m_f times in all, m_f / |O| times each, so a link of O carries the sum over
// representatives f of (m_f / |O|) x rate(f). When every representative crossing O stands for the
// same number w of flows there, O becomes one link of rate / w, and SimGrid's max-min on the folded
// machine gives each representative the rate it has in the whole one. Where that does not hold
// (a route crossing O twice, different w on one orbit), fold_collective says why and nothing folds.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtsim {

struct CollectiveFold {
  int rotation = 0;      ///< local positions of the GPUs' rotation (0: none; identical flows may still merge)
  bool mirrored = false; ///< and the collective's nodes mirrored (first + last - node)
  int largest_orbit = 1; ///< the most tasks one representative stands for
  /// Per task of the range (by offset from its first): the offset of the task whose span it takes,
  /// the first of its orbit (itself when nothing folds).
  std::vector<int> representative;
  /// Per directed link (2 * link + forward) the representatives cross: the directed link that stands
  /// for its orbit, and how many flows each representative flow stands for on each link of it.
  struct FoldedLink {
    int key = -1;
    int flows = 1;
  };
  std::unordered_map<int, FoldedLink> links;
  std::string why_not;  ///< why no rotation (and no merge of identical flows) applies
  /// Tasks that SimGrid runs (the others take a representative's span).
  int representatives() const;
};

/// The smallest rotation of every node's local devices (alone, or with the collective's nodes
/// mirrored) that maps the collective in `range` (run on its own: every dependency on a task before
/// it is its start) onto itself, folded as above.
CollectiveFold fold_collective(const Topology& topology, const TaskGraph& graph, const CollectiveRange& range);

/// Whether the fold found for the collective `folded` holds for `other` as it is: the same tasks,
/// devices, routes' end points and dependencies (as offsets in each range), the same timers (delays
/// and empty computes), and durations and byte counts that correspond one to one (two tasks of
/// `other` have equal (seconds, bytes) exactly when their counterparts in `folded` do). Every test
/// fold_collective makes compares devices, links and those equalities only, so it would find the
/// same fold: DDP's buckets of one plan differ in their byte counts alone, and 16,384 GPUs spent
/// 3.5 s folding each.
bool fold_carries_over(const TaskGraph& graph, const CollectiveRange& folded, const CollectiveRange& other);

/// The machine a folded collective runs on alone: the topology, plus for each directed link that
/// stands for w != 1 flows a link of 1/w its rate, with the representatives' routes pinned through
/// them.
Topology folded_machine(const Topology& topology, const TaskGraph& graph, const CollectiveRange& range,
                        const CollectiveFold& fold);

}  // namespace dtsim
