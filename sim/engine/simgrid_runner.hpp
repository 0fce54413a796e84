// Part of the SimGrid adapter (with simgrid_engine.cpp; no other file of dtsim includes SimGrid):
// runs a TaskGraph on a built platform and records when each task ran.
//
// How tasks run, chosen for how SimGrid 3.32 scales. In 3.32 every activity is listed in one
// actor's std::list of activities, and finishing it calls list::remove, which scans that whole list:
// - an Exec is listed by the actor that creates it (ExecImpl's constructor);
// - a host-to-host Comm (Comm::sendto_init) is always detached, so always in maestro's list;
// - a mailbox Comm that is not detached is listed by its sender and its receiver, and leaves those
//   lists only when they wait for it.
// Started from maestro, every activity in flight sat in maestro's one list: O(activities in
// flight) per completion. So:
// - a transfer is a mailbox Comm between two "reaper" actors, one per device: the source's sends
//   and the destination's receives. Maestro starts it at the right moment from Comm objects each
//   reaper made beforehand (its stock; a Comm is listed by the actor that made it), and learns
//   that it finished from the network model (Link::on_communication_state_change); the reapers
//   only wait for their comms in turn, which takes them off their lists (in flight on that device);
// - a compute task alone on its device is a kernel timer (SimGrid's CPU model runs a lone Exec at
//   the host's full speed, so it ends at start + seconds either way, and a timer costs no actor);
//   when a second compute starts on a device while one runs, the first's timer is cancelled and
//   both run as Execs from that moment, the first with the work it has left, so SimGrid shares the
//   device between them as before (issue 15: the replay of 4,096-GPU DDP ran its graph in 0.37 s
//   instead of 1.24 s). Until the device is free again, every compute there is an Exec;
// - an Exec is made, started and waited for by a worker actor of its own on its device's host, so
//   a worker's list never holds more than one activity; idle workers wait on a semaphore in a pool
//   per host. A transfer whose reapers have run out of stock goes to two workers too (a receive
//   posted first, then the send; the receiver reports it);
// - delays are kernel timers (exact: end = start + seconds), and zero-length tasks (markers,
//   joins, transfers to oneself) finish on the spot.
// The graph's bookkeeping (dependencies, spans) runs in maestro: workers report through
// simcall_answered, finished comms are handled when the clock advances.
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/plan/task_graph.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace dtsim::simgrid_adapter {

constexpr double kUnitsPerSecond = 1e9;  // host speed: one "flop" is one nanosecond of work

struct Platform {
  std::vector<simgrid::s4u::Host*> hosts;             // by device index (null: the graph does not use it)
  std::vector<simgrid::s4u::SplitDuplexLink*> links;  // by link index (null: no route crosses it)
};

// Per-transfer traits: a rate cap and whether the route's latency is paid. They go through the
// network model's bandwidth- and latency-factor callbacks, which see (size, src, dst, route) but
// not the comm; SimGrid calls them while the comm starts, synchronously inside the start, so the
// runner sets the traits of the comm it is about to start and the callbacks read them.
struct FlowTraits {
  double cap = 0;  ///< bytes/s, 0: none
  bool latency = true;

  /// The bandwidth factor that makes a lone flow's bound min(route bandwidth, cap) (flows sharing a
  /// link share the factor's capacity: see Task::rate_cap).
  double bandwidth_factor(const std::vector<simgrid::s4u::Link*>& route) const;
  double latency_factor() const { return latency ? 1.0 : 0.0; }
};

/// The graph's dependencies the other way round, in one flat array (successors of task i are
/// targets[offsets[i] .. offsets[i + 1])), and how many distinct dependencies each task waits on.
struct Successors {
  std::vector<std::size_t> offsets;
  std::vector<int> targets;
  std::vector<int> waiting_on;

  explicit Successors(const TaskGraph& graph);
};

/// Runs the graph on the platform: owns the bookkeeping of which task is running, waiting or done,
/// and the worker actors.
class Runner {
public:
  /// `stop`: end the run once the steady state has converged (null: run every task).
  Runner(const TaskGraph& graph, const Platform& platform, const SteadyStateStop* stop = nullptr);
  ~Runner();

  const FlowTraits& traits() const { return traits_; }

  /// Starts the tasks without dependencies; call before Engine::run.
  void start();

  /// Spans after the run; throws if a task (of the iterations simulated) did not finish.
  std::vector<Span> finish();
  /// Leading iterations whose every task ran: all of them unless the run stopped early.
  int iterations() const { return stopped_ ? complete_ : static_cast<int>(left_in_iteration_.size()); }

private:
  struct Worker;
  struct Reaper;

  void ready(int id) { ready_.push_back(id); }
  void drain();
  void launch(int id);
  void done(int id);
  Worker& take_worker(int host);
  void make_idle(Worker& w);
  void start_send(simgrid::s4u::Comm& comm, int id);
  void work(Worker& w);
  void start_compute(int id);
  void run_exec(int id, double seconds);
  bool start_transfer(int id);
  void wake(Reaper& r);
  void reap(Reaper& r);
  void comms_finished();
  bool converged(int id);
  void end_actors();

  const TaskGraph& graph_;
  const Platform& platform_;
  Successors next_;
  std::vector<Span> spans_;
  std::vector<int> ready_;
  FlowTraits traits_;
  int remaining_;                                // tasks not finished yet
  std::vector<std::unique_ptr<Worker>> workers_;  // every worker ever created
  std::vector<std::vector<Worker*>> idle_;       // by host
  std::vector<std::unique_ptr<Reaper>> reapers_;  // by host (null: no transfer there)
  std::unordered_map<const void*, int> comm_task_;  // comm in flight (its kernel object) -> task
  std::vector<int> finished_comms_;              // tasks whose comm finished this time step
  /// Per host: the compute running alone there as a timer (task -1: none), and how many computes
  /// run there as Execs.
  struct TimedCompute {
    int task = -1;
    simgrid::kernel::timer::Timer* timer = nullptr;  ///< due when the task ends
  };
  std::vector<TimedCompute> timed_;
  std::vector<int> execs_;
  const SteadyStateStop* stop_;
  std::vector<int> left_in_iteration_;  // tasks not finished yet, per iteration
  int complete_ = 0;                    // leading iterations finished
  bool stopped_ = false;                // the steady state converged: nothing more starts
  bool ending_ = false;                 // all done or stopped: actors end when idle
};

}  // namespace dtsim::simgrid_adapter
