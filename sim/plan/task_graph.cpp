#include "sim/plan/task_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace dtsim {

int TaskGraph::add(Task task)
{
  for (int dep : task.after) {
    if (dep < 0 || dep >= size())
      throw std::logic_error("TaskGraph: dependency on a task that does not exist yet: " + task.name.get());
  }
  task.iteration = static_cast<std::int16_t>(iteration_);
  if (task.group < 0)
    task.group = group_;
  tasks_.push_back(std::move(task));
  return size() - 1;
}

Task TaskGraph::make_task(TaskKind kind, const TaskText& name, TaskCategory category, const std::vector<int>& after)
{
  Task t;
  t.kind = kind;
  t.name = name;
  t.category = category;
  t.after.assign(after.begin(), after.end());
  return t;
}

int TaskGraph::add_compute(int device, double seconds, std::string name, TaskCategory category, std::vector<int> after)
{
  Task t = make_task(TaskKind::Compute, TaskText(std::move(name)), category, after);
  t.device = device;
  t.seconds = seconds;
  return add(std::move(t));
}

int TaskGraph::add_delay(int device, double seconds, std::string name, TaskCategory category, std::vector<int> after)
{
  return add_delay(device, seconds, TaskText(std::move(name)), category, after);
}

int TaskGraph::add_delay(int device, double seconds, const TaskText& name, TaskCategory category,
                         const std::vector<int>& after)
{
  Task t = make_task(TaskKind::Delay, name, category, after);
  t.device = device;
  t.seconds = seconds;
  return add(std::move(t));
}

int TaskGraph::add_transfer(int src, int dst, double bytes, std::string name, TaskCategory category,
                            std::vector<int> after)
{
  return add_transfer(src, dst, bytes, TaskText(std::move(name)), category, after);
}

int TaskGraph::add_transfer(int src, int dst, double bytes, const TaskText& name, TaskCategory category,
                            const std::vector<int>& after)
{
  Task t = make_task(TaskKind::Transfer, name, category, after);
  t.src = src;
  t.dst = dst;
  t.device = src;
  t.bytes = bytes;
  return add(std::move(t));
}

void TaskGraph::add_dependency(int task, int must_finish_first)
{
  if (must_finish_first < 0 || must_finish_first >= task)
    throw std::logic_error("TaskGraph: a task may only depend on earlier tasks");
  tasks_[static_cast<std::size_t>(task)].after.push_back(must_finish_first);
}

void TaskGraph::keep_first(int count)
{
  tasks_.resize(static_cast<std::size_t>(count));
  while (!collectives_.empty() && collectives_.back().end > count)
    collectives_.pop_back();
}

void TaskGraph::mark_collective(int first, std::vector<int> done, int copy_of)
{
  if (first < 0 || first > size() || (!collectives_.empty() && first < collectives_.back().end))
    throw std::logic_error("TaskGraph: a collective's tasks must come after the previous collective's");
  for (int d : done)
    if (d < first || d >= size())
      throw std::logic_error("TaskGraph: a collective's done task must be one of its own");
  int original = -1;
  if (copy_of >= 0) {
    const auto it = std::lower_bound(collectives_.begin(), collectives_.end(), copy_of,
                                     [](const CollectiveRange& r, int id) { return r.first < id; });
    if (it == collectives_.end() || it->first != copy_of || it->end - it->first != size() - first)
      throw std::logic_error("TaskGraph: a collective copies one that is not there");
    original = static_cast<int>(it - collectives_.begin());
  }
  collectives_.push_back({first, size(), std::move(done), original});
}

double union_length(std::vector<Span> spans)
{
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  double total = 0;
  double start = 0;
  double end = 0;
  bool open = false;
  for (const auto& s : spans) {
    if (!open || s.start > end) {
      total += open ? end - start : 0.0;
      start = s.start;
      end = s.end;
      open = true;
    } else {
      end = std::max(end, s.end);
    }
  }
  return total + (open ? end - start : 0.0);
}

}  // namespace dtsim
