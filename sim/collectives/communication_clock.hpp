// Times of communications run on their own, for plans that simulate one representative GPU of each
// set of identical ones (a folded plan: every data-parallel replica and every tensor rank of a
// Megatron stage, every rank of an FSDP shard group, runs the same schedule).
//
// Such a plan cannot expand a collective into its flows: most of the collective's ranks are not in
// it. Instead each communication is registered here with the communications that run beside it by
// symmetry (the same call on the other replicas' or tensor ranks' groups, which may share its
// links: eight tensor ranks' data-parallel rings on one node's NICs), and the whole set is
// simulated flow by flow, NCCL-faithful, on the whole machine, on its own: once per distinct set,
// in a SimGrid run of its own (IsolatedRunPool: side by side on the machine's cores, folded by the
// symmetry of its channels where it has one; isolated_runs.hpp). The plan then holds, per
// representative, a delay of that rank's time from the set's start to its result.
//
// What this leaves out, and the folded plan says so: contention between different communications
// (a pipeline send with a data-parallel ring on one NIC) and ranks that join a collective at
// different times (stragglers: the plan gives its representatives the slowest image's jitter).
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/engine/isolated_runs.hpp"
#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtsim {

/// One communication of a set: a collective as NCCL runs it, or (plain) one transfer from
/// call.ranks[0] to call.ranks[1] of call.bytes, as a plan's point-to-point send is added.
struct ClockedComm {
  CollectiveCall call;
  bool plain_transfer = false;
};

class CommunicationClock {
public:
  /// `options`: the plan's collective options (their memo and on_collective are not used).
  CommunicationClock(const Topology& topology, const CollectiveOptions& options);
  ~CommunicationClock();
  CommunicationClock(const CommunicationClock&) = delete;
  CommunicationClock& operator=(const CommunicationClock&) = delete;

  /// Registers communications that start together; returns the set's id (the same for a set of the
  /// same content, registered before). Its isolated run starts at once when a core is free.
  int add(const std::vector<ClockedComm>& set);
  /// Seconds from the set's start until rank `position` of its communication `item` has its result
  /// (waits for the set's run).
  double seconds(int id, int item, int position);
  /// Bytes that rank sends in the set's run (the payloads of the transfers it is the source of).
  double bytes_sent(int id, int item, int position) const;
  /// Bytes that rank receives in the set's run (the payloads of the transfers it is the destination of).
  double bytes_received(int id, int item, int position) const;

  int sets() const { return static_cast<int>(sets_.size()); }
  /// Tasks of the distinct sets, and of those how many SimGrid ran (fewer where folded).
  long long tasks() const { return tasks_; }
  long long simulated() const { return simulated_; }

private:
  struct Set {
    int collective = -1;  ///< index in graph_.collectives()
    std::vector<std::vector<int>> done;  ///< per item and position: the task after which it has its result
    bool timed = false;
    std::vector<std::vector<double>> seconds;  ///< once timed
    std::vector<std::vector<double>> sent;      ///< per item and position: bytes that rank sends
    std::vector<std::vector<double>> received;  ///< and receives
  };
  void time(Set& set);

  const Topology& topology_;
  CollectiveOptions options_;
  TaskGraph graph_;  ///< every set, each after a start of its own
  std::unique_ptr<IsolatedRunPool> pool_;
  std::unordered_map<std::string, int> by_key_;
  std::vector<Set> sets_;
  long long tasks_ = 0;
  long long simulated_ = 0;
};

}  // namespace dtsim
