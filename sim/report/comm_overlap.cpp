// See comm_overlap.hpp.
#include "sim/report/comm_overlap.hpp"

#include "sim/report/device_communication.hpp"

#include <algorithm>
#include <map>

namespace dtsim {

namespace {

/// The spans merged into disjoint, sorted intervals.
std::vector<Span> merged(std::vector<Span> spans)
{
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!(s.end > s.start))
      continue;
    if (!out.empty() && s.start <= out.back().end)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<CommOverlap> comm_overlap_on(const Plan& plan, const std::vector<Span>& spans, int device,
                                         const std::vector<CriticalPart>& critical, double least_s)
{
  const auto& tasks = plan.graph.tasks();
  const int iterations = static_cast<int>(plan.iteration_end.size());
  const auto counted = [&](const Task& t, int id) {
    return t.iteration >= plan.warmup_iterations && t.iteration < iterations && id > plan.setup_end &&
           t.kind != TaskKind::Compute && t.category != TaskCategory::Marker && t.category != TaskCategory::Optimizer &&
           t.category != TaskCategory::None;
  };
  std::map<TaskCategory, std::vector<Span>, BySpelling> comm;
  for (const DeviceCommunication& c : communication_on(plan, spans, device, counted))
    comm[tasks[static_cast<std::size_t>(c.task)].category].push_back(c.span);
  const double measured = std::max(1, iterations - plan.warmup_iterations);
  std::vector<CommOverlap> out;
  for (auto& [category, list] : comm) {
    double length = 0;
    for (const Span& s : merged(std::move(list)))
      length += s.end - s.start;
    if (length / measured < least_s)
      continue;
    double exposed = 0;
    for (const auto& part : critical)
      if (part.category == category)
        exposed += part.seconds;
    out.push_back({category, length / measured, std::min(exposed, length / measured)});
  }
  std::stable_sort(out.begin(), out.end(), [](const CommOverlap& a, const CommOverlap& b) { return a.exposed_s > b.exposed_s; });
  return out;
}

}  // namespace dtsim
