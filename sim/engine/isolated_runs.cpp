#include "sim/engine/isolated_runs.hpp"

#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <poll.h>
#include <stdexcept>

namespace dtsim {

namespace {

/// One collective simulated on its own on `machine`, its ranks starting at once: the tasks of
/// `range` that represent others (all, unfolded), each waiting on its dependencies' representatives,
/// the start-ups on a gate at time 0. Returns each task's span, its representative's.
std::vector<Span> simulate_one(const Topology& machine, const TaskGraph& g, const CollectiveRange& r,
                               const std::vector<int>& rep)
{
  TaskGraph iso;
  const int gate = iso.add_delay(g[r.done[0]].device, 0.0, "replay gate", TaskCategory::Marker);
  std::vector<int> ids(static_cast<std::size_t>(r.end - r.first), -1);
  auto remap = [&](int id) {
    return id >= r.first ? ids[static_cast<std::size_t>(rep[static_cast<std::size_t>(id - r.first)])] : gate;
  };
  for (int i = 0; i < r.end - r.first; ++i) {
    if (rep[static_cast<std::size_t>(i)] != i)
      continue;
    Task t = g[r.first + i];
    for (int& dep : t.after)
      dep = remap(dep);
    std::sort(t.after.begin(), t.after.end());
    t.after.erase(std::unique(t.after.begin(), t.after.end()), t.after.end());
    t.sender_joined = t.sender_joined >= 0 ? remap(t.sender_joined) : -1;
    iso.set_iteration(t.iteration);
    ids[static_cast<std::size_t>(i)] = iso.add(std::move(t));
  }
  const std::vector<Span> spans = simulate_here(machine, iso);
  const double t0 = spans[static_cast<std::size_t>(gate)].end;
  std::vector<Span> out;
  out.reserve(rep.size());
  for (int i : rep) {
    const Span& s = spans[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])];
    out.push_back({s.start - t0, s.end - t0});
  }
  return out;
}

/// The job of a child process: the collective folded by `fold` (empty: none) and simulated alone
/// on a machine whose folded links carry its representatives' routes. Returns the number of tasks
/// simulated, then every task's span.
std::string isolated_job(const Topology& topology, const TaskGraph& g, const CollectiveRange& r, CollectiveFold fold)
{
  if (fold.representative.empty()) {
    fold.representative.resize(static_cast<std::size_t>(r.end - r.first));
    std::iota(fold.representative.begin(), fold.representative.end(), 0);
  }
  const std::int64_t simulated = fold.representatives();
  std::string out(reinterpret_cast<const char*>(&simulated), sizeof simulated);
  out += encode_spans(simulate_one(folded_machine(topology, g, r, fold), g, r, fold.representative));
  return out;
}

IsolatedRun decode_run(const std::string& bytes, int tasks)
{
  std::int64_t simulated = 0;
  if (bytes.size() < sizeof simulated)
    throw std::runtime_error("replay: truncated result of an isolated run");
  std::memcpy(&simulated, bytes.data(), sizeof simulated);
  return {decode_spans(bytes.substr(sizeof simulated), tasks), simulated};
}

}  // namespace

std::size_t collective_content_hash(const TaskGraph& g, const CollectiveRange& r)
{
  std::size_t h = 0;
  boost::hash_combine(h, r.end - r.first);
  for (int id = r.first; id < r.end; ++id) {
    const Task& t = g[id];
    boost::hash_combine(h, static_cast<int>(t.kind));
    boost::hash_combine(h, t.device);
    boost::hash_combine(h, t.src);
    boost::hash_combine(h, t.dst);
    boost::hash_combine(h, t.bytes);
    boost::hash_combine(h, t.seconds);
    for (int dep : t.after)
      boost::hash_combine(h, r.relative(dep));
  }
  for (int d : r.done)
    boost::hash_combine(h, r.relative(d));
  return h;
}

IsolatedRunPool::IsolatedRunPool(const Topology& topology, bool fold, int early_min_tasks)
  : topology_(topology), fold_(fold), early_min_tasks_(early_min_tasks), lanes_(simulation_lanes() - 1)
{
}

void IsolatedRunPool::offer(const TaskGraph& graph, int collective, bool expanded)
{
  const CollectiveRange& r = graph.collectives()[static_cast<std::size_t>(collective)];
  if (expanded && r.end - r.first >= early_min_tasks_ && lanes_ > 0 && !runs_.count(collective))
    queued_.push_back({collective, static_cast<double>(r.end - r.first), &graph, std::nullopt});
  collect_done();
  start_queued();
}

void IsolatedRunPool::plan_built()
{
  queued_.clear();
  lanes_ = simulation_lanes();
}

bool IsolatedRunPool::has(const TaskGraph& graph, int collective) const
{
  const auto it = runs_.find(collective);
  if (it == runs_.end())
    return false;
  const CollectiveRange& r = graph.collectives()[static_cast<std::size_t>(collective)];
  return it->second.first == r.first && it->second.end == r.end && it->second.hash == collective_content_hash(graph, r);
}

void IsolatedRunPool::run(const TaskGraph& graph, int collective, const CollectiveFold& fold)
{
  const CollectiveRange& r = graph.collectives()[static_cast<std::size_t>(collective)];
  const double weight = fold.representative.empty() ? r.end - r.first : fold.representatives();
  runs_.erase(collective);  // an early run of other tasks at that index (has() said no): killed, never taken
  queued_.push_back({collective, weight, &graph, fold});
  collect_done();
  start_queued();
}

IsolatedRun IsolatedRunPool::take(int collective)
{
  auto queued = [&] {
    return std::any_of(queued_.begin(), queued_.end(), [&](const Queued& q) { return q.collective == collective; });
  };
  for (;;) {
    collect_done();
    start_queued();
    const auto it = runs_.find(collective);
    if (it != runs_.end() && !it->second.job) {
      IsolatedRun out = decode_run(it->second.result, it->second.end - it->second.first);
      runs_.erase(it);
      return out;
    }
    if (it == runs_.end() && !queued())
      throw std::logic_error("IsolatedRunPool: that collective was never given to run");
    wait_for_any();
  }
}

void IsolatedRunPool::collect_done()
{
  for (auto& [k, run] : runs_)
    if (run.job && run.job->done()) {
      run.result = run.job->result();
      run.job.reset();
    }
}

void IsolatedRunPool::start_queued()
{
  int running = 0;
  for (const auto& [k, run] : runs_)
    running += run.job.has_value();
  while (running < lanes_ && !queued_.empty()) {
    // The heaviest first (longest-processing-time first: the last to start are the shortest).
    const auto next = std::max_element(queued_.begin(), queued_.end(),
                                       [](const Queued& a, const Queued& b) { return a.weight < b.weight; });
    const Queued q = *next;
    queued_.erase(next);
    const TaskGraph& graph = *q.graph;
    const CollectiveRange& r = graph.collectives()[static_cast<std::size_t>(q.collective)];
    Run& run = runs_[q.collective];
    run.first = r.first;
    run.end = r.end;
    run.hash = collective_content_hash(graph, r);
    const Topology& topology = topology_;
    const bool fold = fold_;
    run.job.emplace([&topology, &graph, &r, &q, fold] {
      if (q.fold)
        return isolated_job(topology, graph, r, *q.fold);
      return isolated_job(topology, graph, r, fold ? fold_collective(topology, graph, r) : CollectiveFold{});
    });
    ++running;
  }
}

void IsolatedRunPool::wait_for_any()
{
  std::vector<pollfd> fds;
  for (const auto& [k, run] : runs_)
    if (run.job)
      fds.push_back({run.job->fd(), POLLIN, 0});
  if (fds.empty())
    return;
  while (::poll(fds.data(), fds.size(), -1) < 0)
    if (errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
}

}  // namespace dtsim
