// The SimGrid adapter (3.32 API), with simgrid_runner.hpp/.cpp: the only files of dtsim that
// include SimGrid headers.
//
// Platform: one empty zone; every device of the topology is a host, every link a split-duplex
// link (UP = a->b, DOWN = b->a). Each (src, dst) pair that some transfer uses gets a one-way
// bypass route with the links Topology::route() chose: SimGrid keeps bypass routes in a map, so
// the platform grows with the pairs in use, not with devices^2 as a full zone's dense table does
// (24 GB at 16,384 GPUs). CM02 without cross-traffic and TCP-gamma makes a lone flow take exactly
// latency + size / bandwidth, shared max-min with the others.
//
// How tasks run (through reaper and worker actors, so that no SimGrid list of activities grows with
// the activities in flight): simgrid_runner.hpp.
//
// SimGrid supports one simulation per process (its clock and configuration are global), so
// simulate() forks: the child runs SimGrid and pipes the spans back; a ChildJob runs one such child
// while this process goes on (the replay's isolated collectives, several at once: isolated_runs.hpp).
#include "sim/engine/engine.hpp"
#include "sim/engine/simgrid_runner.hpp"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
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
#include <functional>
#include <csignal>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define DTSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTSIM_ASAN 1
#endif
#endif
#ifndef DTSIM_ASAN
#define DTSIM_ASAN 0
#endif

static_assert(SIMGRID_VERSION >= 33200, "dtsim needs SimGrid 3.32 or newer");

namespace sg4 = simgrid::s4u;

namespace dtsim {
namespace {

using simgrid_adapter::FlowTraits;
using simgrid_adapter::kUnitsPerSecond;
using simgrid_adapter::Platform;
using simgrid_adapter::Runner;

/// The hosts and links the graph uses, by device and link index (null where unused: a
/// collective's isolated run on a 16,384-GPU machine touches a few nodes' worth of devices, and
/// making the whole machine's hosts and links cost 0.3 s a run there).
Platform build_platform(const Topology& topology, const TaskGraph& graph)
{
  auto* zone = sg4::create_empty_zone("dtsim");
  std::vector<char> uses(topology.devices().size(), 0);
  std::vector<std::pair<int, int>> pairs;
  for (const auto& t : graph.tasks()) {
    if (t.kind == TaskKind::Transfer && t.src != t.dst)
      pairs.emplace_back(t.src, t.dst);
    for (const int d : {t.device, t.src, t.dst})
      if (d >= 0)
        uses[static_cast<std::size_t>(d)] = 1;
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<const Route*> routes;  // per pair
  std::vector<char> crossed(topology.links().size(), 0);
  for (const auto& [src, dst] : pairs) {
    routes.push_back(&topology.route(src, dst));
    for (const Hop& hop : *routes.back())
      crossed[static_cast<std::size_t>(hop.link)] = 1;
  }
  Platform p;
  p.hosts.assign(topology.devices().size(), nullptr);
  for (std::size_t i = 0; i < uses.size(); ++i)
    if (uses[i])
      p.hosts[i] = zone->create_host(topology.device(static_cast<int>(i)).name, kUnitsPerSecond)->seal();
  p.links.assign(topology.links().size(), nullptr);
  for (std::size_t i = 0; i < crossed.size(); ++i) {
    if (!crossed[i])
      continue;
    const Link& l = topology.link(static_cast<int>(i));
    auto* link = zone->create_split_duplex_link(l.name, l.bandwidth);
    link->set_latency(l.latency);
    link->seal();
    p.links[i] = link;
  }
  std::vector<sg4::LinkInRoute> route;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [src, dst] = pairs[k];
    route.clear();
    for (const Hop& hop : *routes[k]) {
      route.emplace_back(p.links[static_cast<std::size_t>(hop.link)],
                         hop.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_bypass_route(p.hosts[static_cast<std::size_t>(src)]->get_netpoint(),
                           p.hosts[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route);
  }
  zone->seal();
  return p;
}

Simulation run_simgrid(const Topology& topology, const TaskGraph& graph, const SteadyStateStop* stop)
{
  // Actors (simgrid_runner.hpp) only wait on SimGrid: small stacks, allocated without guard pages
  // (a guard page splits each stack's mapping in two, and the kernel allows 65,530 mappings per
  // process). AddressSanitizer does not follow SimGrid's own stack switching: threads there. The
  // context factory is chosen when the engine starts, so it goes on the command line.
  char name[] = "dtsim";
  char quiet[] = "--log=root.thresh:critical";
#if DTSIM_ASAN
  char factory[] = "--cfg=contexts/factory:thread";
  char* argv[] = {name, quiet, factory, nullptr};
#else
  char* argv[] = {name, quiet, nullptr};
#endif
  int argc = static_cast<int>(sizeof argv / sizeof argv[0]) - 1;
  // SimGrid runs in a child process that writes its result and exits (simulate(), ChildJob): the
  // engine, the platform and the runner are left to that exit, which frees them at once, instead of
  // being destroyed one actor, comm and link at a time before the result can be written (0.11 to
  // 0.26 s for each distinct collective of 16,384-GPU DDP, 0.15 s for its replayed graph).
  sg4::Engine& engine = *new sg4::Engine(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config(DTSIM_ASAN ? "contexts/stack-size:1024" : "contexts/stack-size:16");
  sg4::Engine::set_config("contexts/guard-size:0");

  const Platform& p = *new Platform(build_platform(topology, graph));
  Runner& runner = *new Runner(graph, p, stop);
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
  Simulation out;
  out.spans = runner.finish();
  out.iterations = runner.iterations();
  return out;
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

/// A job running in a forked child, which pipes back a status byte, then the job's result (or an
/// error message).
struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Child start_child(const std::function<std::string()>& job)
{
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // or the child would write the parent's buffered output a second time
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    char status = 0;
    std::string payload;
    try {
      payload = job();
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
  return {pid, fds[0]};
}

/// Reads a child's result and reaps it. A child writes only once its job is done, so reading
/// several children one after the other cannot deadlock.
std::string finish_child(const Child& child)
{
  std::string got = read_all(child.fd);
  ::close(child.fd);
  int wstatus = 0;
  ::waitpid(child.pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || got.empty())
    throw std::runtime_error("the SimGrid simulation process failed");
  if (got[0] != 0)
    throw std::runtime_error("simulation: " + got.substr(1));
  return got.substr(1);
}

std::string encode(const Simulation& sim)
{
  std::string out(reinterpret_cast<const char*>(&sim.iterations), sizeof sim.iterations);
  out.append(encode_spans(sim.spans));
  return out;
}

Simulation decode_simulation(const std::string& bytes, int tasks)
{
  Simulation out;
  if (bytes.size() < sizeof out.iterations)
    throw std::runtime_error("simulation: truncated result");
  std::memcpy(&out.iterations, bytes.data(), sizeof out.iterations);
  out.spans = decode_spans(bytes.substr(sizeof out.iterations), tasks);
  return out;
}

Simulation simulate_in_child(const Topology& topology, const TaskGraph& graph, const SteadyStateStop* stop)
{
  if (graph.size() == 0)
    return {};
  const std::string got = ChildJob([&] { return encode(run_simgrid(topology, graph, stop)); }).result();
  return decode_simulation(got, graph.size());
}

}  // namespace

std::string encode_spans(const std::vector<Span>& spans)
{
  return {reinterpret_cast<const char*>(spans.data()), spans.size() * sizeof(Span)};
}

std::vector<Span> decode_spans(const std::string& bytes, int count)
{
  if (count < 0 || bytes.size() != static_cast<std::size_t>(count) * sizeof(Span))
    throw std::runtime_error("simulation: truncated result");
  std::vector<Span> out(static_cast<std::size_t>(count));
  if (count > 0)  // an empty vector's data() may be null, which memcpy may not take
    std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<Span> simulate(const Topology& topology, const TaskGraph& graph)
{
  return simulate_in_child(topology, graph, nullptr).spans;
}

std::vector<Span> simulate_here(const Topology& topology, const TaskGraph& graph)
{
  if (graph.size() == 0)
    return {};
  return run_simgrid(topology, graph, nullptr).spans;
}

Simulation simulate_until_steady(const Topology& topology, const TaskGraph& graph, const SteadyStateStop& stop)
{
  return simulate_in_child(topology, graph, &stop);
}

ChildJob::ChildJob(const std::function<std::string()>& job)
{
  const Child child = start_child(job);
  pid_ = child.pid;
  fd_ = child.fd;
}

ChildJob::ChildJob(ChildJob&& other) noexcept : pid_(other.pid_), fd_(other.fd_)
{
  other.pid_ = -1;
  other.fd_ = -1;
}

ChildJob::~ChildJob()
{
  if (pid_ < 0)
    return;
  ::kill(pid_, SIGKILL);
  ::close(fd_);
  ::waitpid(pid_, nullptr, 0);
}

bool ChildJob::done() const
{
  if (pid_ < 0)
    return false;
  pollfd fd{fd_, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;  // a child writes only once its job is done
}

std::string ChildJob::result()
{
  if (pid_ < 0)
    throw std::logic_error("ChildJob: the result was already taken");
  const Child child{pid_, fd_};
  pid_ = -1;
  fd_ = -1;
  return finish_child(child);
}

int simulation_lanes()
{
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}


}  // namespace dtsim
