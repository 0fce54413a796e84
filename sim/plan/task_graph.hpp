// One or more training iterations as a graph of tasks with dependencies: compute on a device,
// transfers between devices (which contend for the links of their route), and pure delays
// (protocol latencies, launch overheads). Built by strategies and collectives, run by the engine.
// Knows nothing of SimGrid.
#pragma once

#include "sim/plan/task_category.hpp"
#include "sim/plan/task_deps.hpp"

#include <boost/flyweight.hpp>
#include <boost/flyweight/no_tracking.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

enum class TaskKind : std::uint8_t { Compute, Transfer, Delay };

/// A task's name. Many tasks share each text (every copy of a repeated collective, every
/// iteration: the trace of one iteration of ResNet-50 DDP on 256 H100s has 8,658 distinct names for
/// 521,764 events), so each distinct text is stored once (Boost.Flyweight) and a task holds a pointer
/// to it: copying a task copies no string. Texts are never released (no_tracking): a run creates a
/// bounded set of them.
using TaskText = boost::flyweight<std::string, boost::flyweights::no_tracking>;

/// The empty text, interned once. A default-constructed flyweight looks the empty string up in the
/// factory (a hash under a lock) each time, and every Task made starts with two of them.
inline const TaskText& empty_text()
{
  static const TaskText empty;
  return empty;
}

/// Fields ordered so that a task is 80 bytes (73 of fields, 7 of padding after `category`): a plan
/// of 16,384 GPUs holds tens of millions of them.
struct Task {
  TaskKind kind = TaskKind::Compute;
  bool link_latency = true;  ///< Transfer: pays its route's link latencies (false: a model's own
                             ///< per-hop latency already includes them, as NCCL's does)
  /// Training iteration it belongs to (a plan has at most 4096: predict.cpp's parse_settings;
  /// TaskGraph::set_iteration refuses what does not fit).
  std::int16_t iteration = 0;
  int device = -1;         ///< Compute/Delay: the device it is attributed to
  TaskText name = empty_text();      ///< what a person reads in a trace: "bwd layer4", "ring rs step 3"
  TaskCategory category = TaskCategory::None;  ///< forward, backward, optimizer, allreduce, broadcast, ...
  double seconds = 0;      ///< Compute/Delay: duration when alone on the device
  double bytes = 0;        ///< Transfer: payload; Delay: 0, or in a folded plan the bytes its rank sends in the
                           ///< communication the delay stands for (sim/strategies/folded_comms.hpp)
  /// Transfer: bytes/s ceiling (0: none), through SimGrid's bandwidth factor: exact for a lone
  /// flow, but capped flows on the same link share one cap (two on one NVLink get half each), so
  /// no collective uses it (Tree LL/LL128 are paced with pace_transfers instead).
  double rate_cap = 0;
  int src = -1;            ///< Transfer: source device
  int dst = -1;            ///< Transfer: destination device
  /// Transfer of a collective: the task after which its sending rank had joined the collective
  /// (its start-up); the causality check verifies that no such transfer starts earlier (-1: none).
  int sender_joined = -1;
  int group = -1;          ///< e.g. the bucket or collective it is part of (-1: none)
  TaskDeps after;          ///< tasks that must finish before this one starts
};
static_assert(sizeof(Task) == 80, "Task: 80 bytes");

/// Whether a task is communication: a transfer, or a folded plan's delay standing for one (its
/// bytes are what its rank sends; sim/strategies/folded_comms.hpp).
inline bool is_communication(const Task& t)
{
  return t.kind == TaskKind::Transfer || (t.kind == TaskKind::Delay && t.bytes > 0);
}

/// Whether a task is a collective's start-up on one of its ranks (NCCL's launch and per-hop latency:
/// a delay in the collective's category, one of the communication categories from Scatter on;
/// sim/collectives/collective.cpp): that rank is in the communication, though no transfer of it is
/// in flight yet.
inline bool is_collective_startup(const Task& t)
{
  return t.kind == TaskKind::Delay && t.bytes == 0 && t.seconds > 0 && t.category >= TaskCategory::Scatter;
}

/// Whether task `t` runs on GPU `device`: a transfer it sends or receives, any other task its own.
inline bool on_device(const Task& t, int device)
{
  return t.kind == TaskKind::Transfer ? (t.src == device || t.dst == device) : t.device == device;
}

/// The tasks one collective expanded into: ids [first, end), added one after the other, so that it
/// can be recognised, simulated once on its own and replayed (collective_replay.hpp). done[i] is the
/// task after which its rank i has the result; no task outside the range waits on another of it.
struct CollectiveRange {
  int first = 0;
  int end = 0;
  std::vector<int> done;
  /// The earlier collective this one is a copy of, task for task (an ExpansionMemo copy whose start
  /// tasks wait on as many tasks as the original's), or -1: the replay then knows they run alike
  /// without comparing their tasks.
  int copy_of = -1;
  /// A task id as seen from inside the range: its offset there, or -1 for any task before it.
  int relative(int id) const { return id >= first ? id - first : -1; }
};

class TaskGraph {
public:
  int add(Task task);
  int add_compute(int device, double seconds, std::string name, TaskCategory category, std::vector<int> after = {});
  int add_delay(int device, double seconds, std::string name, TaskCategory category, std::vector<int> after = {});
  int add_transfer(int src, int dst, double bytes, std::string name, TaskCategory category,
                   std::vector<int> after = {});
  /// The same with a name already interned (the legs of one hop share it: one look-up, not three).
  int add_transfer(int src, int dst, double bytes, const TaskText& name, TaskCategory category,
                   const std::vector<int>& after);
  int add_delay(int device, double seconds, const TaskText& name, TaskCategory category,
                const std::vector<int>& after);
  void add_dependency(int task, int must_finish_first);
  /// Drops every task from `count` on (those of iterations not simulated, when they come last).
  void keep_first(int count);
  /// Room for `count` tasks in all, so that adding up to that many moves no task.
  void reserve(int count) { tasks_.reserve(static_cast<std::size_t>(count)); }
  /// Records that tasks [first, size()) are one collective, with each rank's last task; `copy_of`:
  /// the first task of the earlier collective it copies (CollectiveRange::copy_of), or -1.
  void mark_collective(int first, std::vector<int> done, int copy_of = -1);
  const std::vector<CollectiveRange>& collectives() const { return collectives_; }
  /// Forgets the collectives marked from task `first` on (their tasks stay), so that a caller may
  /// mark them, with what lies between them, as one (communication_clock.hpp's sets).
  void unmark_collectives_from(int first)
  {
    while (!collectives_.empty() && collectives_.back().first >= first)
      collectives_.pop_back();
  }

  Task& operator[](int id) { return tasks_[static_cast<std::size_t>(id)]; }
  const Task& operator[](int id) const { return tasks_[static_cast<std::size_t>(id)]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  int size() const { return static_cast<int>(tasks_.size()); }

  /// Tasks added from now on carry this iteration number / group id.
  void set_iteration(int iteration)
  {
    if (iteration < INT16_MIN || iteration > INT16_MAX)
      throw std::logic_error("TaskGraph: an iteration number that fits 16 bits expected");
    iteration_ = iteration;
  }
  void set_group(int group) { group_ = group; }
  int group() const { return group_; }

private:
  Task make_task(TaskKind kind, const TaskText& name, TaskCategory category, const std::vector<int>& after);

  std::vector<Task> tasks_;
  std::vector<CollectiveRange> collectives_;
  int iteration_ = 0;
  int group_ = -1;
};

/// When a task ran in the simulation.
struct Span {
  double start = 0;
  double end = 0;
  double duration() const { return end - start; }
};

/// Total time covered by at least one of the spans (the length of their union).
double union_length(std::vector<Span> spans);

}  // namespace dtsim

/// Formats a TaskText as its text.
template <>
struct fmt::formatter<dtsim::TaskText> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const dtsim::TaskText& text, FormatContext& ctx) const
  {
    return fmt::formatter<std::string_view>::format(std::string_view(text.get()), ctx);
  }
};
