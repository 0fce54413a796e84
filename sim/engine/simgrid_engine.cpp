// The SimGrid adapter: the only file of dtsim that includes SimGrid headers (3.32 API).
//
// Platform: one empty zone; every device of the topology is a host, every link a split-duplex
// link (UP = a->b, DOWN = b->a). Each (src, dst) pair that some transfer uses gets a one-way
// bypass route with the links Topology::route() chose: SimGrid keeps bypass routes in a map, so
// the platform grows with the pairs in use, not with devices^2 as a full zone's dense table does
// (24 GB at 16,384 GPUs). CM02 without cross-traffic and TCP-gamma makes a lone flow take exactly
// latency + size / bandwidth, shared max-min with the others.
//
// How tasks run, chosen for how SimGrid 3.32 scales:
// - transfers are host-to-host Comms started from maestro (not detached: a detached comm, and
//   every activity maestro creates, goes into maestro's std::list of activities, whose remove()
//   scans the whole list at each completion: O(activities in flight) per activity);
// - compute is an Exec on the device's host (speed 1e9 "flop"/s, so flops = nanoseconds); it is
//   in maestro's list while it runs, which holds about one per device at a time;
// - delays contend with nothing, so they are kernel timers (exact: end = start + seconds), and
//   zero-length tasks (markers, joins, transfers to oneself) finish on the spot.
// A task is started when its last dependency finishes. Finished activities are released at the
// next time step (not inside their own completion signal, which SimGrid still runs code after).
//
// SimGrid supports one simulation per process (its clock and configuration are global), so
// simulate() forks: the child runs SimGrid and pipes the spans back.
#include "sim/engine/engine.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <simgrid/version.h>
#include <xbt/log.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

static_assert(SIMGRID_VERSION >= 33200, "dtsim needs SimGrid 3.32 or newer");

namespace sg4 = simgrid::s4u;

namespace dtsim {
namespace {

constexpr double kUnitsPerSecond = 1e9;   // host speed: one "flop" is one nanosecond of work

struct Platform {
  std::vector<sg4::Host*> hosts;             // by device index
  std::vector<sg4::SplitDuplexLink*> links;  // by link index
};

Platform build_platform(const Topology& topology, const TaskGraph& graph)
{
  auto* zone = sg4::create_empty_zone("dtsim");
  Platform p;
  p.hosts.reserve(topology.devices().size());
  for (const auto& d : topology.devices())
    p.hosts.push_back(zone->create_host(d.name, kUnitsPerSecond)->seal());
  p.links.reserve(topology.links().size());
  for (const auto& l : topology.links()) {
    auto* link = zone->create_split_duplex_link(l.name, l.bandwidth);
    link->set_latency(l.latency);
    link->seal();
    p.links.push_back(link);
  }
  std::vector<std::pair<int, int>> pairs;
  for (const auto& t : graph.tasks()) {
    if (t.kind == TaskKind::Transfer && t.src != t.dst)
      pairs.emplace_back(t.src, t.dst);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<sg4::LinkInRoute> route;
  for (const auto& [src, dst] : pairs) {
    route.clear();
    for (const Hop& hop : topology.route(src, dst)) {
      route.emplace_back(p.links[static_cast<std::size_t>(hop.link)],
                         hop.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_bypass_route(p.hosts[static_cast<std::size_t>(src)]->get_netpoint(),
                           p.hosts[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route);
  }
  zone->seal();
  return p;
}

// Per-transfer traits: a rate cap and whether the route's latency is paid. Comm::set_rate() is
// ignored for host-to-host comms in 3.32, so both go through the network model's bandwidth- and
// latency-factor callbacks, which see (size, src, dst, route) but not the comm. SimGrid calls them
// while the comm starts (synchronously, when started from maestro), so the engine sets the traits
// of the comm it is about to start and the callbacks read them.
struct FlowTraits {
  double cap = 0;  ///< bytes/s, 0: none
  bool latency = true;

  /// The bandwidth factor that makes a lone flow's bound min(route bandwidth, cap) (flows sharing a
  /// link share the factor's capacity: see Task::rate_cap).
  double bandwidth_factor(const std::vector<sg4::Link*>& route) const
  {
    if (cap <= 0 || route.empty())
      return 1.0;
    double bottleneck = route.front()->get_bandwidth();
    for (const auto* l : route)
      bottleneck = std::min(bottleneck, l->get_bandwidth());
    return std::min(1.0, cap / bottleneck);
  }
  double latency_factor() const { return latency ? 1.0 : 0.0; }
};

/// The graph's dependencies the other way round, in one flat array (successors of task i are
/// targets[offsets[i] .. offsets[i + 1])), and how many distinct dependencies each task waits on.
struct Successors {
  std::vector<std::size_t> offsets;
  std::vector<int> targets;
  std::vector<int> waiting_on;

  explicit Successors(const TaskGraph& graph)
  {
    const auto count = static_cast<std::size_t>(graph.size());
    offsets.assign(count + 1, 0);
    waiting_on.assign(count, 0);
    std::vector<int> deps;
    const auto distinct = [&deps](const Task& t) -> const std::vector<int>& {
      deps = t.after;
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
};

/// Runs the graph on the platform: owns the bookkeeping of which task is running, waiting or done.
class Runner {
public:
  Runner(const TaskGraph& graph, const Platform& platform)
      : graph_(graph), platform_(platform), next_(graph), spans_(static_cast<std::size_t>(graph.size()), Span{-1, -1}),
        running_(static_cast<std::size_t>(graph.size()))
  {
  }

  FlowTraits& traits() { return traits_; }

  /// Starts the tasks without dependencies; call before Engine::run.
  void start()
  {
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { activity_done(a); });
    sg4::Engine::on_time_advance_cb([this](double) { released_.clear(); });
    for (int id = 0; id < graph_.size(); ++id) {
      if (next_.waiting_on[static_cast<std::size_t>(id)] == 0)
        ready(id);
    }
    drain();
  }

  /// Spans after the run; throws if a task did not finish.
  std::vector<Span> finish()
  {
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

private:
  // Tasks whose dependencies are all done go through `ready_` so that a chain of zero-length tasks
  // is walked in a loop, not by recursion.
  void ready(int id) { ready_.push_back(id); }

  void drain()
  {
    while (!ready_.empty()) {
      const int id = ready_.back();
      ready_.pop_back();
      launch(id);
    }
  }

  void launch(int id)
  {
    const Task& t = graph_[id];
    const double now = sg4::Engine::get_clock();
    spans_[static_cast<std::size_t>(id)].start = now;
    if (t.kind == TaskKind::Transfer && t.src != t.dst) {
      auto comm = sg4::Comm::sendto_init();
      // An empty host-to-host comm started from a completion callback never completes in 3.32:
      // send at least one byte.
      comm->set_payload_size(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(t.bytes + 0.5)));
      comm->set_data(task_tag(id));
      running_[static_cast<std::size_t>(id)] = comm;
      traits_ = FlowTraits{t.rate_cap, t.link_latency};
      comm->set_source(platform_.hosts[static_cast<std::size_t>(t.src)]);
      comm->set_destination(platform_.hosts[static_cast<std::size_t>(t.dst)]);  // starts it (3.32)
      traits_ = FlowTraits{};
      return;
    }
    if (t.kind == TaskKind::Compute && t.seconds > 0) {
      auto exec = sg4::Exec::init();
      exec->set_host(platform_.hosts[static_cast<std::size_t>(t.device)]);
      exec->set_flops_amount(t.seconds * kUnitsPerSecond);
      exec->set_data(task_tag(id));
      running_[static_cast<std::size_t>(id)] = exec;
      exec->start();
      return;
    }
    if (t.kind != TaskKind::Transfer && t.seconds > 0) {
      simgrid::kernel::timer::Timer::set(now + t.seconds, [this, id] {
        done(id);
        drain();
      });
      return;
    }
    done(id);  // zero-length: a marker, a join, a transfer to itself
  }

  void activity_done(const sg4::Activity& a)
  {
    const auto tag = reinterpret_cast<std::uintptr_t>(a.get_data<void>());
    if (tag == 0)
      return;
    const auto id = static_cast<int>(tag - 1);
    released_.push_back(std::move(running_[static_cast<std::size_t>(id)]));
    done(id);
    drain();
  }

  void done(int id)
  {
    spans_[static_cast<std::size_t>(id)].end = sg4::Engine::get_clock();
    const auto i = static_cast<std::size_t>(id);
    for (std::size_t k = next_.offsets[i]; k < next_.offsets[i + 1]; ++k) {
      const int succ = next_.targets[k];
      if (--next_.waiting_on[static_cast<std::size_t>(succ)] == 0)
        ready(succ);
    }
  }

  static void* task_tag(int id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id) + 1); }

  const TaskGraph& graph_;
  const Platform& platform_;
  Successors next_;
  std::vector<Span> spans_;
  std::vector<sg4::ActivityPtr> running_;   // by task, until it finishes
  std::vector<sg4::ActivityPtr> released_;  // finished this time step, freed at the next one
  std::vector<int> ready_;
  FlowTraits traits_;
};

std::vector<Span> run_simgrid(const Topology& topology, const TaskGraph& graph)
{
  int argc = 1;
  char name[] = "dtsim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");

  const Platform p = build_platform(topology, graph);
  Runner runner(graph, p);
  const bool special = std::any_of(graph.tasks().begin(), graph.tasks().end(),
                                   [](const Task& t) { return t.rate_cap > 0 || !t.link_latency; });
  if (special) {  // registered before the first comm can start
    auto* model = engine.get_netzone_root()->get_network_model();
    model->set_bw_factor_cb([&runner](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>& route,
                                      const std::unordered_set<sg4::NetZone*>&) {
      return runner.traits().bandwidth_factor(route);
    });
    model->set_lat_factor_cb([&runner](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                       const std::unordered_set<sg4::NetZone*>&) {
      return runner.traits().latency_factor();
    });
  }
  runner.start();
  engine.run();
  return runner.finish();
}

void write_all(int fd, const void* data, std::size_t size)
{
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(4);
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd)
{
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

std::vector<Span> simulate(const Topology& topology, const TaskGraph& graph)
{
  if (graph.size() == 0)
    return {};
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // or the child would write the parent's buffered output a second time
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    char status = 0;
    std::string payload;
    try {
      const auto spans = run_simgrid(topology, graph);
      payload.assign(reinterpret_cast<const char*>(spans.data()), spans.size() * sizeof(Span));
    } catch (const std::exception& e) {
      status = 1;
      payload = e.what();
    }
    write_all(fds[1], &status, 1);
    write_all(fds[1], payload.data(), payload.size());
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  const std::string got = read_all(fds[0]);
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || got.empty())
    throw std::runtime_error("the SimGrid simulation process failed");
  if (got[0] != 0)
    throw std::runtime_error("simulation: " + got.substr(1));
  if (got.size() - 1 != static_cast<std::size_t>(graph.size()) * sizeof(Span))
    throw std::runtime_error("simulation: truncated result");
  std::vector<Span> spans(static_cast<std::size_t>(graph.size()));
  std::memcpy(spans.data(), got.data() + 1, got.size() - 1);
  return spans;
}

}  // namespace dtsim
