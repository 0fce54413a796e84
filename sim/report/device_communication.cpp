// See device_communication.hpp.
#include "sim/report/device_communication.hpp"

#include <algorithm>

namespace dtsim {

namespace {

/// The device that has a collective's result after task `t` (CollectiveRange::done): a transfer's
/// destination, a delay's own device.
int device_done(const Task& t)
{
  return t.kind == TaskKind::Transfer ? t.dst : t.device;
}

}  // namespace

std::vector<DeviceCommunication> communication_on(const Plan& plan, const std::vector<Span>& spans, int device,
                                                  const std::function<bool(const Task&, int id)>& counted)
{
  const auto& tasks = plan.graph.tasks();
  const auto task = [&](int i) -> const Task& { return tasks[static_cast<std::size_t>(i)]; };
  const auto span_of = [&](int i) { return spans[static_cast<std::size_t>(i)]; };
  const auto here = [&](int i) { return on_device(task(i), device) && counted(task(i), i); };
  std::vector<DeviceCommunication> out;
  int next = 0;  // the first task not yet looked at (collectives are marked in task order, disjoint)
  const auto lone_tasks_before = [&](int end) {
    for (; next < end; ++next)
      if (here(next))
        out.push_back({next, span_of(next)});
  };
  for (const CollectiveRange& range : plan.graph.collectives()) {
    lone_tasks_before(range.first);
    next = std::max(next, range.end);
    int first_here = -1;
    // When the last rank's start-up ended: from then on the collective runs for all. A collective
    // whose start-ups take no time (CollectiveOptions::ideal, the textbook expansion) counts from
    // its first task's start, its first rank's join.
    double all_joined = -1, first_start = -1;
    for (int i = range.first; i < range.end; ++i) {
      if (here(i)) {
        out.push_back({i, span_of(i)});
        if (first_here < 0)
          first_here = i;
      }
      if (is_collective_startup(task(i)))
        all_joined = std::max(all_joined, span_of(i).end);
      if (first_start < 0 || span_of(i).start < first_start)
        first_start = span_of(i).start;
    }
    if (first_here < 0)
      continue;
    if (all_joined < 0)
      all_joined = first_start;
    double result = 0;  // when the device has the result
    for (const int d : range.done)
      if (d >= 0 && device_done(task(d)) == device)
        result = std::max(result, span_of(d).end);
    if (result > all_joined)
      out.push_back({first_here, {all_joined, result}});
  }
  lone_tasks_before(static_cast<int>(tasks.size()));
  return out;
}

}  // namespace dtsim
