// The SimGrid adapter: the only file of dtsim that includes SimGrid headers (3.32 API).
//
// Platform: one full zone; every device of the topology is a host, every link a split-duplex link
// (UP = a->b, DOWN = b->a); a route is added only for the (src, dst) pairs that some transfer
// uses, with the links Topology::route() chose. CM02 without cross-traffic and TCP-gamma makes a
// lone flow take exactly latency + size / bandwidth, shared max-min with the others.
//
// Tasks run without actors: compute is an Exec on the device's host (speed 1e9 "flop"/s, so
// flops = nanoseconds); delays are Execs on a many-core timer host so they never contend;
// transfers are host-to-host Comms. A task is started from the completion callback of its last
// dependency.
//
// SimGrid supports one simulation per process (its clock and configuration are global), so
// simulate() forks: the child runs SimGrid and pipes the spans back.
#include "sim/engine/engine.hpp"

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/version.h>
#include <xbt/log.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <set>
#include <tuple>
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
  std::vector<sg4::Host*> hosts;           // by device index
  std::vector<sg4::SplitDuplexLink*> links;  // by link index
  sg4::Host* timer = nullptr;
};

Platform build_platform(const Topology& topology, const TaskGraph& graph)
{
  auto* zone = sg4::create_full_zone("dtsim");
  Platform p;
  for (const auto& d : topology.devices())
    p.hosts.push_back(zone->create_host(d.name, kUnitsPerSecond)->seal());
  p.timer = zone->create_host("dtsim.timer", kUnitsPerSecond)->set_core_count(1 << 20)->seal();
  for (const auto& l : topology.links()) {
    auto* link = zone->create_split_duplex_link(l.name, l.bandwidth);
    link->set_latency(l.latency);
    link->seal();
    p.links.push_back(link);
  }
  std::set<std::pair<int, int>> pairs;
  for (const auto& t : graph.tasks()) {
    if (t.kind == TaskKind::Transfer && t.src != t.dst)
      pairs.emplace(t.src, t.dst);
  }
  for (const auto& [src, dst] : pairs) {
    std::vector<sg4::LinkInRoute> route;
    for (const Hop& hop : topology.route(src, dst)) {
      route.emplace_back(p.links[static_cast<std::size_t>(hop.link)],
                         hop.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_route(p.hosts[static_cast<std::size_t>(src)]->get_netpoint(),
                    p.hosts[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();
  return p;
}

// Per-transfer traits: a rate cap and whether the route's latency is paid. Comm::set_rate() is
// ignored for host-to-host comms in 3.32, so both go through the network model's bandwidth- and
// latency-factor callbacks, which see (size, src, dst, route) but not the comm: every transfer is
// keyed by (src, dst, payload bytes), and a transfer whose key is already taken with other traits
// is made one byte larger until its key is its own.
class FlowTraits {
public:
  struct Traits {
    double cap = 0;  ///< bytes/s, 0: none
    bool latency = true;
    bool operator==(const Traits&) const = default;
  };
  /// The payload to give the comm so that its key maps to `traits`.
  std::uint64_t reserve(const sg4::Host* src, const sg4::Host* dst, std::uint64_t bytes, Traits traits)
  {
    for (;; ++bytes) {
      auto [it, inserted] = traits_.try_emplace({src, dst, bytes}, traits);
      if (inserted || it->second == traits)
        return bytes;
    }
  }
  /// The bandwidth factor that makes a lone flow's bound min(route bandwidth, cap) (flows sharing a
  /// link share the factor's capacity: see Task::rate_cap).
  double bandwidth_factor(double size, const sg4::Host* src, const sg4::Host* dst,
                          const std::vector<sg4::Link*>& route) const
  {
    const Traits* t = find(size, src, dst);
    if (!t || t->cap <= 0 || route.empty())
      return 1.0;
    double bottleneck = route.front()->get_bandwidth();
    for (const auto* l : route)
      bottleneck = std::min(bottleneck, l->get_bandwidth());
    return std::min(1.0, t->cap / bottleneck);
  }
  double latency_factor(double size, const sg4::Host* src, const sg4::Host* dst) const
  {
    const Traits* t = find(size, src, dst);
    return t && !t->latency ? 0.0 : 1.0;
  }

private:
  const Traits* find(double size, const sg4::Host* src, const sg4::Host* dst) const
  {
    auto it = traits_.find({src, dst, static_cast<std::uint64_t>(size + 0.5)});
    return it == traits_.end() ? nullptr : &it->second;
  }
  std::map<std::tuple<const sg4::Host*, const sg4::Host*, std::uint64_t>, Traits> traits_;
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

  // Activities are created only when their last dependency has finished: SimGrid 3.32 spends time
  // proportional to the number of activities waiting on dependencies at every event, so
  // declaring the whole DAG up front makes a run quadratic in its size.
  FlowTraits traits;
  const bool special = std::any_of(graph.tasks().begin(), graph.tasks().end(),
                                   [](const Task& t) { return t.rate_cap > 0 || !t.link_latency; });
  if (special) {  // registered before the first comm can start
    auto* model = engine.get_netzone_root()->get_network_model();
    model->set_bw_factor_cb([&traits](double size, const sg4::Host* src, const sg4::Host* dst,
                                      const std::vector<sg4::Link*>& route, const std::unordered_set<sg4::NetZone*>&) {
      return traits.bandwidth_factor(size, src, dst, route);
    });
    model->set_lat_factor_cb([&traits](double size, const sg4::Host* src, const sg4::Host* dst,
                                       const std::vector<sg4::Link*>&, const std::unordered_set<sg4::NetZone*>&) {
      return traits.latency_factor(size, src, dst);
    });
  }

  const auto count = static_cast<std::size_t>(graph.size());
  std::vector<int> waiting_on(count, 0);
  std::vector<std::vector<int>> successors(count);
  for (int id = 0; id < graph.size(); ++id) {
    std::vector<int> deps = graph[id].after;
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    waiting_on[static_cast<std::size_t>(id)] = static_cast<int>(deps.size());
    for (int dep : deps)
      successors[static_cast<std::size_t>(dep)].push_back(id);
  }

  std::vector<Span> spans(count, Span{-1, -1});
  std::vector<sg4::ActivityPtr> running(count);  // keeps each activity alive until the run ends
  std::unordered_map<const sg4::Activity*, int> task_of;
  const auto launch = [&](int id) {
    const Task& t = graph[id];
    spans[static_cast<std::size_t>(id)].start = sg4::Engine::get_clock();
    sg4::ActivityPtr a;
    if (t.kind == TaskKind::Transfer && t.src != t.dst) {
      const sg4::Host* src = p.hosts[static_cast<std::size_t>(t.src)];
      const sg4::Host* dst = p.hosts[static_cast<std::size_t>(t.dst)];
      auto comm = sg4::Comm::sendto_init();
      // An empty host-to-host comm started from a completion callback never completes in 3.32:
      // send at least one byte.
      const auto bytes = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(t.bytes + 0.5));
      comm->set_payload_size(traits.reserve(src, dst, bytes, {t.rate_cap, t.link_latency}));
      comm->set_name(t.name);
      task_of[comm.get()] = id;
      running[static_cast<std::size_t>(id)] = comm;
      comm->set_source(p.hosts[static_cast<std::size_t>(t.src)]);
      comm->set_destination(p.hosts[static_cast<std::size_t>(t.dst)]);  // starts it (3.32)
      return;
    }
    auto exec = sg4::Exec::init();
    exec->set_host(t.kind == TaskKind::Compute ? p.hosts[static_cast<std::size_t>(t.device)] : p.timer);
    exec->set_flops_amount(t.kind == TaskKind::Transfer ? 0.0 : t.seconds * kUnitsPerSecond);
    exec->set_name(t.name);
    task_of[exec.get()] = id;
    running[static_cast<std::size_t>(id)] = exec;
    exec->start();
  };
  sg4::Activity::on_completion_cb([&](const sg4::Activity& a) {
    const auto it = task_of.find(&a);
    if (it == task_of.end())
      return;
    const auto id = static_cast<std::size_t>(it->second);
    spans[id].end = sg4::Engine::get_clock();
    for (int next : successors[id]) {
      if (--waiting_on[static_cast<std::size_t>(next)] == 0)
        launch(next);
    }
  });
  for (int id = 0; id < graph.size(); ++id) {
    if (waiting_on[static_cast<std::size_t>(id)] == 0)
      launch(id);
  }
  engine.run();

  for (std::size_t i = 0; i < count; ++i) {
    if (spans[i].end >= 0 || spans[i].start < 0)
      continue;
    const Task& t = graph[static_cast<int>(i)];
    throw std::runtime_error(fmt::format("task '{}' ({} bytes, {} s) started at {} s and never finished", t.name,
                                         t.bytes, t.seconds, spans[i].start));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (spans[i].end < 0)
      throw std::runtime_error(fmt::format("task '{}' never ran (a dependency cycle or an unreachable route)",
                                           graph[static_cast<int>(i)].name));
  }
  return spans;
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
