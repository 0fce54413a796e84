// Runs a TaskGraph on a SimGrid platform with reaper and worker actors (see simgrid_runner.hpp for
// why).
#include "sim/engine/simgrid_runner.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/simix.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace sg4 = simgrid::s4u;
using simgrid::kernel::actor::simcall_answered;

namespace dtsim::simgrid_adapter {

double FlowTraits::bandwidth_factor(const std::vector<sg4::Link*>& route) const
{
  if (cap <= 0 || route.empty())
    return 1.0;
  double bottleneck = route.front()->get_bandwidth();
  for (const auto* l : route)
    bottleneck = std::min(bottleneck, l->get_bandwidth());
  return std::min(1.0, cap / bottleneck);
}

Successors::Successors(const TaskGraph& graph)
{
  const auto count = static_cast<std::size_t>(graph.size());
  offsets.assign(count + 1, 0);
  waiting_on.assign(count, 0);
  std::vector<int> deps;
  const auto distinct = [&deps](const Task& t) -> const std::vector<int>& {
    deps.assign(t.after.begin(), t.after.end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    return deps;
  };
  for (std::size_t id = 0; id < count; ++id) {
    const auto& d = distinct(graph[static_cast<int>(id)]);
    waiting_on[id] = static_cast<int>(d.size());
    for (int dep : d)
      ++offsets[static_cast<std::size_t>(dep) + 1];
  }
  for (std::size_t i = 0; i < count; ++i)
    offsets[i + 1] += offsets[i];
  targets.resize(offsets[count]);
  std::vector<std::size_t> fill(offsets.begin(), offsets.end() - 1);
  for (std::size_t id = 0; id < count; ++id) {
    for (int dep : distinct(graph[static_cast<int>(id)]))
      targets[fill[static_cast<std::size_t>(dep)]++] = static_cast<int>(id);
  }
}

/// An actor that runs one activity at a time: waits on `wake`, then does `job` for `task`.
struct Runner::Worker {
  enum class Job { Compute, Receive, Send, Exit };
  int host = -1;
  sg4::SemaphorePtr wake;
  sg4::Mailbox* mailbox = nullptr;  // where its receives are posted
  Job job = Job::Exit;
  int task = -1;
  double seconds = 0;      // Compute: the work to do, in seconds alone on the host
  Worker* peer = nullptr;  // a transfer's other end
};

/// A device's actor for transfers: makes the Comm objects maestro starts (they must be made by
/// the actor that sends or receives them) and waits for them once started.
struct Runner::Reaper {
  int host = -1;
  sg4::SemaphorePtr wake;
  sg4::Mailbox* mailbox = nullptr;    // where its receives are posted
  std::vector<sg4::CommPtr> sends;    // made, not started
  std::vector<sg4::CommPtr> receives;
  std::deque<sg4::CommPtr> started;  // to wait for
  void* received = nullptr;          // where receives write the payload
  bool sleeping = false;
  bool exit = false;
};

namespace {
int payload_marker = 0;  // what every comm carries (SimGrid's mailbox comms need a source buffer)
// Comms a reaper keeps made in advance, of each kind (else a transfer falls back to two workers).
// Each made comm holds about 0.5 KB, each worker actor more: at 16,384 GPUs (32,768 reapers) 32 of
// each cost the most memory (the largest child's RSS 3.94 GB, no fallback), 16 the least (3.55 GB),
// and 8 and 12 in between (more fallbacks, 41,603 workers for one broadcast at 8); the same spans.
constexpr std::size_t kStock = 16;
}  // namespace

Runner::Runner(const TaskGraph& graph, const Platform& platform, const SteadyStateStop* stop)
    : graph_(graph), platform_(platform), next_(graph), spans_(static_cast<std::size_t>(graph.size()), Span{-1, -1}),
      remaining_(graph.size()), idle_(platform.hosts.size()), timed_(platform.hosts.size()),
      execs_(platform.hosts.size(), 0), stop_(stop)
{
  for (const Task& t : graph.tasks()) {
    const auto it = static_cast<std::size_t>(std::max(0, static_cast<int>(t.iteration)));
    if (left_in_iteration_.size() <= it)
      left_in_iteration_.resize(it + 1, 0);
    ++left_in_iteration_[it];
  }
}

Runner::~Runner() = default;

void Runner::start()
{
  reapers_.resize(platform_.hosts.size());
  for (const Task& t : graph_.tasks()) {
    if (t.kind != TaskKind::Transfer || t.src == t.dst)
      continue;
    for (const int host : {t.src, t.dst}) {
      auto& r = reapers_[static_cast<std::size_t>(host)];
      if (r)
        continue;
      r = std::make_unique<Reaper>();
      r->host = host;
      r->wake = sg4::Semaphore::create(0);
      const std::string name = fmt::format("reaper{}", host);
      r->mailbox = sg4::Mailbox::by_name(name);
      sg4::Actor::create(name, platform_.hosts[static_cast<std::size_t>(host)], [this, &r = *r] { reap(r); });
    }
  }
  // A finished comm's network action changes state while the models catch up with the clock;
  // its task is done once they all have (the clock has then advanced to its end).
  sg4::Link::on_communication_state_change_cb(
      [this](simgrid::kernel::resource::NetworkAction& action, simgrid::kernel::resource::Action::State) {
        // NetworkAction (not in 3.32's public headers) derives from Action alone.
        const auto& a = reinterpret_cast<const simgrid::kernel::resource::Action&>(action);
        if (a.get_state() != simgrid::kernel::resource::Action::State::FINISHED)
          return;
        const auto it = comm_task_.find(a.get_activity());
        if (it == comm_task_.end())
          return;
        finished_comms_.push_back(it->second);
        comm_task_.erase(it);
      });
  sg4::Engine::on_time_advance_cb([this](double) { comms_finished(); });
  // The first tasks start at time 0 once the reapers have made their first comms.
  simgrid::kernel::timer::Timer::set(0.0, [this] {
    for (int id = 0; id < graph_.size(); ++id) {
      if (next_.waiting_on[static_cast<std::size_t>(id)] == 0)
        ready(id);
    }
    drain();
  });
}

void Runner::comms_finished()
{
  for (const int id : finished_comms_)
    done(id);
  finished_comms_.clear();
  drain();
}

std::vector<Span> Runner::finish()
{
  if (stopped_) {  // the tasks of the later iterations may not have run: none is returned
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      if (graph_[static_cast<int>(i)].iteration >= complete_)
        spans_[i] = Span{-1, -1};
    }
    return std::move(spans_);
  }
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    if (spans_[i].end >= 0 || spans_[i].start < 0)
      continue;
    const Task& t = graph_[static_cast<int>(i)];
    throw std::runtime_error(fmt::format("task '{}' ({} bytes, {} s) started at {} s and never finished", t.name,
                                         t.bytes, t.seconds, spans_[i].start));
  }
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    if (spans_[i].end < 0)
      throw std::runtime_error(fmt::format("task '{}' never ran (a dependency cycle or an unreachable route)",
                                           graph_[static_cast<int>(i)].name));
  }
  return std::move(spans_);
}

// Tasks whose dependencies are all done go through `ready_` so that a chain of zero-length tasks
// is walked in a loop, not by recursion.
void Runner::drain()
{
  while (!ready_.empty()) {
    const int id = ready_.back();
    ready_.pop_back();
    launch(id);
  }
}

void Runner::launch(int id)
{
  const Task& t = graph_[id];
  spans_[static_cast<std::size_t>(id)].start = sg4::Engine::get_clock();
  if (t.kind == TaskKind::Transfer && t.src != t.dst) {
    if (start_transfer(id))
      return;
    Worker& receiver = take_worker(t.dst);
    Worker& sender = take_worker(t.src);
    receiver.job = Worker::Job::Receive;
    sender.job = Worker::Job::Send;
    receiver.task = sender.task = id;
    receiver.peer = &sender;
    sender.peer = &receiver;
    receiver.wake->release();  // the receiver posts its receive, then wakes the sender
    return;
  }
  if (t.kind == TaskKind::Compute && t.seconds > 0) {
    start_compute(id);
    return;
  }
  if (t.kind != TaskKind::Transfer && t.seconds > 0) {
    simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + t.seconds, [this, id] {
      done(id);
      drain();
    });
    return;
  }
  done(id);  // zero-length: a marker, a join, a transfer to itself
}

// A compute alone on its device runs as a timer; one that joins others, or finds one running as a
// timer (which then becomes an Exec with the work it has left), as an Exec (simgrid_runner.hpp).
void Runner::start_compute(int id)
{
  const Task& t = graph_[id];
  const auto host = static_cast<std::size_t>(t.device);
  const double now = sg4::Engine::get_clock();
  TimedCompute& timed = timed_[host];
  if (timed.task < 0 && execs_[host] == 0) {
    timed.task = id;
    timed.timer = simgrid::kernel::timer::Timer::set(now + t.seconds, [this, host, id] {
      timed_[host] = TimedCompute{};
      done(id);
      drain();
    });
    return;
  }
  // A timer due now has done its work: it ends as it is (this compute then runs alone, as an Exec).
  if (timed.task >= 0 && timed.timer->get_date() > now) {
    const int earlier = timed.task;
    const double left = timed.timer->get_date() - now;
    timed.timer->remove();
    timed = TimedCompute{};
    run_exec(earlier, left);
  }
  run_exec(id, t.seconds);
}

void Runner::run_exec(int id, double seconds)
{
  const int host = graph_[id].device;
  ++execs_[static_cast<std::size_t>(host)];
  Worker& w = take_worker(host);
  w.job = Worker::Job::Compute;
  w.task = id;
  w.seconds = seconds;
  w.wake->release();
}

void Runner::done(int id)
{
  spans_[static_cast<std::size_t>(id)].end = sg4::Engine::get_clock();
  if (stopped_)
    return;  // what was in flight when the run stopped: nothing starts after it
  if (stop_ && converged(id)) {
    stopped_ = true;
    end_actors();
    return;
  }
  const auto i = static_cast<std::size_t>(id);
  for (std::size_t k = next_.offsets[i]; k < next_.offsets[i + 1]; ++k) {
    const int succ = next_.targets[k];
    if (--next_.waiting_on[static_cast<std::size_t>(succ)] == 0)
      ready(succ);
  }
  if (--remaining_ == 0)
    end_actors();
}

// Counts the task as finished in its iteration; true when that completes iteration k - 1 and
// iterations k - 1 and k - 2 took the same time within the tolerance (k >= min_iterations).
bool Runner::converged(int id)
{
  const auto it = static_cast<std::size_t>(std::max(0, static_cast<int>(graph_[id].iteration)));
  if (--left_in_iteration_[it] > 0 || static_cast<int>(it) != complete_)
    return false;
  const auto total = static_cast<int>(left_in_iteration_.size());
  while (complete_ < total && left_in_iteration_[static_cast<std::size_t>(complete_)] == 0)
    ++complete_;
  const int k = complete_;
  if (k < std::max(3, stop_->min_iterations) || k >= total || k > static_cast<int>(stop_->iteration_end.size()))
    return false;
  const auto end_of = [this](int iteration) {
    return spans_[static_cast<std::size_t>(stop_->iteration_end[static_cast<std::size_t>(iteration)])].end;
  };
  const double last = end_of(k - 1) - end_of(k - 2);
  const double before = end_of(k - 2) - end_of(k - 3);
  return std::abs(last - before) <= stop_->tolerance * std::abs(last);
}

// All done, or stopped early: the idle workers and the reapers end (busy workers when they go idle).
void Runner::end_actors()
{
  if (ending_)
    return;
  ending_ = true;
  for (auto& pool : idle_) {  // all done: the idle workers end (busy ones end when they go idle)
    for (Worker* w : pool) {
      w->job = Worker::Job::Exit;
      w->wake->release();
    }
    pool.clear();
  }
  for (auto& r : reapers_) {
    if (r) {
      r->exit = true;
      wake(*r);
    }
  }
}

// Starts the transfer with a comm from each reaper's stock; false when one of them has none.
bool Runner::start_transfer(int id)
{
  const Task& t = graph_[id];
  Reaper& from = *reapers_[static_cast<std::size_t>(t.src)];
  Reaper& to = *reapers_[static_cast<std::size_t>(t.dst)];
  if (from.sends.empty() || to.receives.empty())
    return false;
  sg4::CommPtr send = std::move(from.sends.back());
  from.sends.pop_back();
  sg4::CommPtr receive = std::move(to.receives.back());
  to.receives.pop_back();
  // An empty comm never completes in 3.32 when started from a completion: at least one byte.
  send->set_mailbox(to.mailbox);
  send->set_payload_size(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(t.bytes + 0.5)));
  receive->start();
  start_send(*send, id);  // matches the receive: the comm starts now
  comm_task_.emplace(send->get_impl(), id);
  from.started.push_back(std::move(send));
  to.started.push_back(std::move(receive));
  wake(from);
  wake(to);
  return true;
}

void Runner::wake(Reaper& r)
{
  if (!r.sleeping)
    return;
  r.sleeping = false;
  r.wake->release();
}

// The reaper actor's body.
void Runner::reap(Reaper& r)
{
  for (;;) {
    while (r.sends.size() < kStock)
      r.sends.push_back(r.mailbox->put_init()->set_src_data(&payload_marker, sizeof(void*)));
    while (r.receives.size() < kStock)
      r.receives.push_back(r.mailbox->get_init()->set_dst_data(&r.received, sizeof(void*)));
    if (!r.started.empty()) {
      const sg4::CommPtr comm = std::move(r.started.front());
      r.started.pop_front();
      comm->wait();
      continue;
    }
    if (r.exit)
      return;
    r.sleeping = true;
    r.wake->acquire();
  }
}

Runner::Worker& Runner::take_worker(int host)
{
  auto& pool = idle_[static_cast<std::size_t>(host)];
  if (!pool.empty()) {
    Worker* w = pool.back();
    pool.pop_back();
    return *w;
  }
  const std::string name = fmt::format("w{}", workers_.size());
  auto& w = *workers_.emplace_back(std::make_unique<Worker>());
  w.host = host;
  w.wake = sg4::Semaphore::create(0);
  w.mailbox = sg4::Mailbox::by_name(name);
  sg4::Actor::create(name, platform_.hosts[static_cast<std::size_t>(host)], [this, &w] { work(w); });
  return w;
}

void Runner::make_idle(Worker& w)
{
  if (ending_) {
    w.job = Worker::Job::Exit;
    w.wake->release();
    return;
  }
  idle_[static_cast<std::size_t>(w.host)].push_back(&w);
}

// In maestro, so that no other comm starts between setting the traits and the callbacks reading
// them.
void Runner::start_send(sg4::Comm& comm, int id)
{
  const Task& t = graph_[id];
  traits_ = FlowTraits{t.rate_cap, t.link_latency};
  comm.start();
  traits_ = FlowTraits{};
}

// The worker actor's body.
void Runner::work(Worker& w)
{
  for (;;) {
    w.wake->acquire();
    const int id = w.task;
    switch (w.job) {
    case Worker::Job::Exit:
      return;
    case Worker::Job::Compute:
      sg4::this_actor::exec_init(w.seconds * kUnitsPerSecond)->wait();
      simcall_answered([this, &w, id] {
        --execs_[static_cast<std::size_t>(w.host)];
        make_idle(w);
        done(id);
        drain();
      });
      break;
    case Worker::Job::Receive: {
      void* payload = nullptr;
      const sg4::CommPtr comm = w.mailbox->get_init()->set_dst_data(&payload, sizeof(void*));
      Worker* sender = w.peer;
      simcall_answered([&comm, sender] {
        comm->start();
        sender->wake->release();
      });
      comm->wait();
      simcall_answered([this, &w, id] {
        make_idle(w);
        done(id);
        drain();
      });
      break;
    }
    case Worker::Job::Send: {
      // An empty comm never completes in 3.32 when started from a completion: at least one byte.
      const auto bytes = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(graph_[id].bytes + 0.5));
      const sg4::CommPtr comm = w.peer->mailbox->put_init(&payload_marker, bytes);
      simcall_answered([this, &comm, id] { start_send(*comm, id); });
      comm->wait();
      simcall_answered([this, &w] { make_idle(w); });
      break;
    }
    }
  }
}

}  // namespace dtsim::simgrid_adapter
