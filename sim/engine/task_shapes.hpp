// A collective's tasks as shapes: everything that decides how a task runs, with its devices and its
// dependencies (offsets in the collective) as a map of devices gives them, and the classes of tasks
// of one shape. The fold (collective_symmetry.cpp) looks a task's image up among them.
#pragma once

#include "sim/plan/task_graph.hpp"

// GCC 12 warns (-Wstringop-overread) on small_vector's move of its inline elements once inlined into
// a caller: a false positive of its object-size analysis (clang 14 does not warn, ASan finds nothing).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
#include <boost/container/small_vector.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtsim {

/// A task as the rotation must preserve it: everything that decides how it runs, with devices and
/// dependencies possibly mapped (dependencies as offsets in the range; -1: the collective's start).
struct Shape {
  TaskKind kind = TaskKind::Compute;
  int device = -1, src = -1, dst = -1, joined = -1;
  double seconds = 0, bytes = 0, rate_cap = 0;
  bool link_latency = true;
  boost::container::small_vector<int, 4> after;  ///< most tasks wait on 1 to 3 others: no allocation
  bool operator==(const Shape&) const = default;
};

/// A hash of every field of the shape.
std::size_t hash_of(const Shape& s);

/// A delay or an empty compute: a timer, whose device does not change when it ends (a join on a
/// node's first GPU for the whole node, say).
inline bool is_timer(const Task& task)
{
  return task.kind == TaskKind::Delay || (task.kind == TaskKind::Compute && !(task.seconds > 0));
}

/// `task`'s shape with its devices through `device` and its dependencies (offsets) through `dep`.
template <class DeviceMap, class DepMap>
Shape shape_of(const Task& task, const CollectiveRange& r, DeviceMap device, DepMap dep)
{
  auto offset = [&](int id) { return id >= r.first ? dep(id - r.first) : -1; };
  Shape s;
  s.kind = task.kind;
  s.device = task.device >= 0 && !is_timer(task) ? device(task.device) : -1;
  s.src = task.src >= 0 ? device(task.src) : -1;
  s.dst = task.dst >= 0 ? device(task.dst) : -1;
  s.joined = task.sender_joined >= 0 ? offset(task.sender_joined) : -1;
  s.seconds = task.seconds;
  s.bytes = task.bytes;
  s.rate_cap = task.rate_cap;
  s.link_latency = task.link_latency;
  for (int d : task.after)
    s.after.push_back(offset(d));
  std::sort(s.after.begin(), s.after.end());
  s.after.erase(std::unique(s.after.begin(), s.after.end()), s.after.end());
  return s;
}

/// The range's tasks as shapes, each task's class (`alias`) the first task of its shape. Timers of
/// one shape end at the same moment; transfers of one shape (the same two devices, bytes and
/// dependencies: rings that share a node's inner hops) start together on one route and share it
/// equally, so they end together too. Dependencies go to classes, which makes the rotation's image
/// of a task unambiguous (it maps classes); every transfer of a class is still a flow of its own.
struct Shapes {
  std::vector<Shape> of;   ///< per task, dependencies through `alias`
  std::vector<int> alias;  ///< per task: the first task of its shape (itself for a compute)
  /// The tasks that are their own alias, by shape hash: the first and last of each hash, and per
  /// task the next one of its hash (-1: none), in task order (one array, not a list per hash).
  std::unordered_map<std::size_t, std::pair<int, int>> by_hash;
  std::vector<int> next_of_hash;
  /// Calls f(j) for each task j of hash `h` that is its own alias, in order, until f returns true.
  template <class F>
  void each_of_hash(std::size_t h, F f) const
  {
    const auto it = by_hash.find(h);
    for (int j = it == by_hash.end() ? -1 : it->second.first; j >= 0; j = next_of_hash[static_cast<std::size_t>(j)])
      if (f(j))
        return;
  }
};

/// The range's tasks as shapes (see Shapes).
Shapes shapes_of(const TaskGraph& g, const CollectiveRange& r);

}  // namespace dtsim
