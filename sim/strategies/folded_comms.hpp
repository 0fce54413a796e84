// The communications of a folded plan: one that simulates one representative GPU of each set of
// identical ones (communication_clock.hpp). Each communication becomes, per representative taking
// part, a delay of that rank's time in an isolated flow-level run of the communication and the
// images of it that run beside it; representatives of one communication first wait for each other
// (a gate: the collective starts when its last rank has joined). The delays carry the bytes their
// rank sends, so that reports count them as communication, and the plan the bytes it receives.
#pragma once

#include "sim/collectives/communication_clock.hpp"
#include "sim/plan/task_graph.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/plan.hpp"

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

class FoldedComms {
public:
  FoldedComms(const Topology& topology, const CollectiveOptions& options);

  /// A representative taking part in item `item` of a set, as rank `position` of it, on `device`,
  /// once the tasks `after` are done.
  struct Member {
    int item = 0;
    int position = 0;
    int device = -1;
    std::vector<int> after;
  };
  /// Adds `set` (its communications start together) for `members`; returns, per member in order,
  /// the task after which it has its result. Durations are set by finish().
  std::vector<int> add(TaskGraph& graph, const std::vector<ClockedComm>& set, const std::vector<Member>& members,
                       const std::string& name, TaskCategory category);
  /// Adds `set` whose item 0 is a point-to-point send (plain transfer) from `sender` (its position
  /// 0) to the representative on `receiver_device` (its position 1), which waits for the returned task
  /// (on the sender's device) rather than on one of its own: the bytes it receives are its own.
  int add_send(TaskGraph& graph, const std::vector<ClockedComm>& set, const Member& sender, int receiver_device,
               const std::string& name, TaskCategory category);
  /// Sets every delay added so far in plan.graph to its time (waits for the isolated runs) and
  /// bytes sent, and records who receives how many bytes in plan.folded_received.
  void finish(Plan& plan);

  int sets() const { return clock_.sets(); }
  long long delays() const { return static_cast<long long>(pending_.size()); }
  long long set_tasks() const { return clock_.tasks(); }
  long long simulated_tasks() const { return clock_.simulated(); }

private:
  struct Pending {
    int task, set, item, position;
    int receiver_device = -1;  ///< add_send: the receiving representative (position 1 of the item)
  };
  CommunicationClock clock_;
  std::vector<Pending> pending_;
};

/// The report's note on a folded plan: `simulated` GPUs stood for `gpus`, `who` ("each stage's 6 x 8
/// GPUs"); how many distinct communication sets were simulated on their own, and what is left out.
std::string folded_note(const FoldedComms& comms, int gpus, int simulated, const std::string& who);

/// Closes a folded plan whose one representative, plan.ranks[0], stands for all its ranks (FSDP,
/// ZeRO): its compute at the slowest rank's jitter, the delays' durations set, plan.ranks narrowed
/// to it. Returns the jitter note and the fold note.
std::pair<std::string, std::string> finish_one_representative(Plan& plan, FoldedComms& comms, const StepJitter& jitter);

}  // namespace dtsim
