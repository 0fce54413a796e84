#include "sim/report/critical_path.hpp"

#include <algorithm>
#include <cstddef>
#include <map>

namespace dtsim {

std::vector<CriticalPart> critical_path_by_category(const Plan& plan, const std::vector<Span>& spans)
{
  const auto iterations = static_cast<int>(plan.iteration_end.size());
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
