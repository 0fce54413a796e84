// Runs a TaskGraph on a Topology. The only module of dtsim that talks to SimGrid: each device is a
// host, each link a split-duplex link, each transfer a host-to-host comm over the route the
// topology computed, contending with the others by max-min sharing (CM02, no TCP effects).
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/topology/topology.hpp"

#include <functional>
#include <string>
#include <vector>

namespace dtsim {

/// Simulates the graph; returns one span per task (indexed like the graph). Each call runs SimGrid
/// in a forked child process (SimGrid allows one simulation per process), so it may be called
/// any number of times.
std::vector<Span> simulate(const Topology& topology, const TaskGraph& graph);

/// How many simulations run side by side at once: the machine's cores.
int simulation_lanes();

/// A job started at once in a forked child process of its own (so that it may run SimGrid once,
/// with simulate_here) while this process goes on; result() waits for what it returned. Destroyed
/// before that, it kills and reaps the child.
class ChildJob {
public:
  explicit ChildJob(const std::function<std::string()>& job);
  ChildJob(ChildJob&& other) noexcept;
  ChildJob& operator=(ChildJob&& other) = delete;
  ChildJob(const ChildJob&) = delete;
  ChildJob& operator=(const ChildJob&) = delete;
  ~ChildJob();
  /// Whether the job is done (its result can be taken without waiting for its work).
  bool done() const;
  /// The pipe its result comes through (readable once it is done), to poll several.
  int fd() const { return fd_; }
  /// What the job returned (a job that threw makes this throw); once only.
  std::string result();

private:
  int pid_ = -1;
  int fd_ = -1;
};

/// Simulates the graph in this process: only inside a ChildJob's job (SimGrid allows one
/// simulation per process).
std::vector<Span> simulate_here(const Topology& topology, const TaskGraph& graph);

/// Spans as bytes and back (a job's result), `count` of them expected.
std::string encode_spans(const std::vector<Span>& spans);
std::vector<Span> decode_spans(const std::string& bytes, int count);

/// When a run of several training iterations may end early: as soon as every task of the first k
/// iterations has finished (k >= min_iterations) and iterations k-1 and k-2 took the same time
/// within `tolerance` (relative), the steady state has converged: later iterations would repeat it.
/// Tasks must carry their iteration (Task::iteration) and those of one iteration may not wait on a
/// later one.
struct SteadyStateStop {
  std::vector<int> iteration_end;  ///< per iteration: the task that closes it
  int min_iterations = 3;          ///< k at least this: a warm-up and two measured iterations
  double tolerance = 1e-6;
};

struct Simulation {
  std::vector<Span> spans;  ///< per task; tasks after an early stop may not have run (-1)
  int iterations = 0;       ///< leading iterations whose every task ran (all, unless stopped early)
};

/// simulate() that stops once the steady state has converged (see SteadyStateStop). Every span of
/// the iterations it returns is the one the full run gives: the run is the same until it stops.
Simulation simulate_until_steady(const Topology& topology, const TaskGraph& graph, const SteadyStateStop& stop);

}  // namespace dtsim
