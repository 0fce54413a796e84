#include "sim/report/critical_path.hpp"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <vector>

namespace dtsim {

namespace {

/// A wait shorter than this is the simulation's rounding, not a gap.
constexpr double kGapTolerance_s = 1e-9;

/// Of a collective of the graph: the dependency from outside it that finished last, over all its
/// ranks' tasks. A replayed collective (collective_replay.hpp) starts on every rank at the join of all
/// its ranks' start dependencies, which the graph does not hold: a rank's own start dependency may have
/// ended long before, and the walk below continues at the rank that joined last instead, as the full
/// simulation's chain does through the collective's transfers. -1 where none. Asked only where the walk
/// meets such a gap (never in an unreplayed run), and kept per collective.
class LastExternalDependency {
 public:
  LastExternalDependency(const TaskGraph& graph, const std::vector<Span>& spans)
      : graph_(graph), spans_(spans), known_(graph.collectives().size(), kUnknown)
  {
  }

  int of(int collective)
  {
    int& last = known_[static_cast<std::size_t>(collective)];
    if (last != kUnknown)
      return last;
    const CollectiveRange& c = graph_.collectives()[static_cast<std::size_t>(collective)];
    last = -1;
    for (int id = c.first; id < c.end; ++id)
      for (const int dep : graph_[id].after)
        if (c.relative(dep) < 0 && (last < 0 || end(dep) > end(last)))
          last = dep;
    return last;
  }

 private:
  static constexpr int kUnknown = -2;
  double end(int task) const { return spans_[static_cast<std::size_t>(task)].end; }

  const TaskGraph& graph_;
  const std::vector<Span>& spans_;
  std::vector<int> known_;
};

/// The index of the collective holding task `id` (-1: none); `collectives` sorted by first task.
int collective_of(const std::vector<CollectiveRange>& collectives, int id)
{
  const auto after = std::upper_bound(collectives.begin(), collectives.end(), id,
                                      [](int task, const CollectiveRange& c) { return task < c.first; });
  if (after == collectives.begin())
    return -1;
  const auto k = std::prev(after);
  return id < k->end ? static_cast<int>(k - collectives.begin()) : -1;
}

}  // namespace

std::vector<CriticalPart> critical_path_by_category(const Plan& plan, const std::vector<Span>& spans)
{
  const auto iterations = static_cast<int>(plan.iteration_end.size());
  const auto& collectives = plan.graph.collectives();
  LastExternalDependency joined_last(plan.graph, spans);
  std::map<TaskCategory, double, BySpelling> total;
  int measured = 0;
  for (int it = std::max(1, plan.warmup_iterations); it < iterations; ++it, ++measured) {
    const double origin = spans[static_cast<std::size_t>(plan.iteration_end[static_cast<std::size_t>(it - 1)])].end;
    int current = plan.iteration_end[static_cast<std::size_t>(it)];
    while (current >= 0) {
      const Span& s = spans[static_cast<std::size_t>(current)];
      const double from = std::max(s.start, origin);
      if (s.end > from)
        total[plan.graph[current].category] += s.end - from;
      if (s.start <= origin)
        break;
      int last = -1;  // the dependency that finished last: the one this task waited for
      for (const int dep : plan.graph[current].after)
        if (last < 0 || spans[static_cast<std::size_t>(dep)].end > spans[static_cast<std::size_t>(last)].end)
          last = dep;
      const int k = collective_of(collectives, current);
      if (k >= 0 && (last < 0 || collectives[static_cast<std::size_t>(k)].relative(last) < 0) &&
          (last < 0 || spans[static_cast<std::size_t>(last)].end < s.start - kGapTolerance_s)) {
        const int joined = joined_last.of(k);
        if (joined >= 0 && (last < 0 || spans[static_cast<std::size_t>(joined)].end > spans[static_cast<std::size_t>(last)].end))
          last = joined;
      }
      current = last;
    }
  }
  std::vector<CriticalPart> parts;
  for (const auto& [category, seconds] : total)
    if (seconds > 0)
      parts.push_back({category, seconds / std::max(1, measured)});
  std::stable_sort(parts.begin(), parts.end(), [](const CriticalPart& a, const CriticalPart& b) { return a.seconds > b.seconds; });
  return parts;
}

}  // namespace dtsim
