#include "sim/engine/causality.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

CausalityReport check_causality(const TaskGraph& graph, const std::vector<Span>& spans, double tolerance_s)
{
  CausalityReport report;
  const auto early = [&](int id, double allowed, const std::string& why) {
    const double by = allowed - spans[static_cast<std::size_t>(id)].start;
    if (by <= tolerance_s)
      return;
    ++report.violations;
    report.worst_early_s = std::max(report.worst_early_s, by);
    if (report.examples.size() < 5)
      report.examples.push_back(fmt::format("'{}' started {:.6f} ms before {}", graph[id].name, by * 1e3, why));
  };
  for (int id = 0; id < graph.size() && static_cast<std::size_t>(id) < spans.size(); ++id) {
    const Task& t = graph[id];
    for (int dep : t.after)
      early(id, spans[static_cast<std::size_t>(dep)].end, fmt::format("its dependency '{}' ended", graph[dep].name));
    if (t.kind == TaskKind::Transfer && t.sender_joined >= 0) {
      ++report.transfers_checked;
      early(id, spans[static_cast<std::size_t>(t.sender_joined)].end,
            fmt::format("its sender joined ('{}')", graph[t.sender_joined].name));
    }
  }
  return report;
}

}  // namespace dtsim
