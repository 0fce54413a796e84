#include "sim/engine/collective_replay.hpp"

#include "sim/engine/collective_overlap.hpp"
#include "sim/engine/collective_symmetry.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/isolated_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

namespace dtsim {

namespace {

/// Per task: the index of the collective it belongs to, or -1.
std::vector<int> collective_of_tasks(const TaskGraph& g)
{
  std::vector<int> owner(static_cast<std::size_t>(g.size()), -1);
  const auto& ranges = g.collectives();
  for (std::size_t k = 0; k < ranges.size(); ++k)
    for (int t = ranges[k].first; t < ranges[k].end; ++t)
      owner[static_cast<std::size_t>(t)] = static_cast<int>(k);
  return owner;
}

/// True when two ranges would run the same way on their own: the same tasks in the same order,
/// with the same dependencies among them (those on earlier tasks all become the start).
bool same_content(const TaskGraph& g, const CollectiveRange& a, const CollectiveRange& b)
{
  if (a.end - a.first != b.end - b.first || a.done.size() != b.done.size())
    return false;
  for (std::size_t i = 0; i < a.done.size(); ++i)
    if (a.relative(a.done[i]) != b.relative(b.done[i]))
      return false;
  for (int i = 0; i < a.end - a.first; ++i) {
    const Task& x = g[a.first + i];
    const Task& y = g[b.first + i];
    if (x.kind != y.kind || x.device != y.device || x.src != y.src || x.dst != y.dst || x.bytes != y.bytes ||
        x.seconds != y.seconds || x.rate_cap != y.rate_cap || x.link_latency != y.link_latency ||
        x.after.size() != y.after.size())
      return false;
    for (std::size_t j = 0; j < x.after.size(); ++j)
      if (a.relative(x.after[j]) != b.relative(y.after[j]))
        return false;
  }
  return true;
}

/// The first task outside a collective that waits on one of its inner tasks (not a rank's result),
/// or -1: such a graph cannot be replayed.
int reaches_inside(const TaskGraph& g, const std::vector<int>& owner)
{
  const auto& ranges = g.collectives();
  std::vector<char> is_done(static_cast<std::size_t>(g.size()), 0);
  for (const auto& r : ranges)
    for (int d : r.done)
      is_done[static_cast<std::size_t>(d)] = 1;
  for (int id = 0; id < g.size(); ++id) {
    const int own = owner[static_cast<std::size_t>(id)];
    auto inner_of_other = [&](int dep) {
      const int k = owner[static_cast<std::size_t>(dep)];
      return k >= 0 && k != own && !is_done[static_cast<std::size_t>(dep)];
    };
    const Task& t = g[id];
    if (std::any_of(t.after.begin(), t.after.end(), inner_of_other) ||
        (t.sender_joined >= 0 && owner[static_cast<std::size_t>(t.sender_joined)] >= 0 &&
         owner[static_cast<std::size_t>(t.sender_joined)] != own))
      return id;
  }
  return -1;
}

struct Isolated {
  std::vector<Span> offsets;  ///< per task of the range, relative to its start
};

/// What the isolated runs handed SimGrid.
struct IsolatedRuns {
  std::vector<Isolated> runs;  ///< per distinct collective
  int folded = 0;              ///< distinct collectives folded by a symmetry
  long long tasks = 0;         ///< tasks simulated (representatives only, where folded)
  long long whole = 0;         ///< tasks of the distinct collectives
};

/// Runs the distinct collectives on their own (isolated_runs.hpp), those `pool` has not started
/// yet folded here first, to know their sizes; each is queued as soon as it is folded. (Folding in
/// the children instead, with no size known, was measured no faster: 0.96x to 1.03x of the wall time
/// at 1,024 and 2,048 GPUs.)
IsolatedRuns simulate_isolated(const Topology& topology, const TaskGraph& g, const std::vector<int>& distinct, bool fold,
                               IsolatedRunPool& pool)
{
  const auto& ranges = g.collectives();
  pool.plan_built();
  // The largest first: the pool starts each as soon as a lane is free while the next is folded.
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < distinct.size(); ++c)
    if (!pool.has(g, distinct[c]))
      order.push_back(c);
  auto size_of = [&](std::size_t c) {
    const CollectiveRange& r = ranges[static_cast<std::size_t>(distinct[c])];
    return r.end - r.first;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size_of(a) > size_of(b); });
  // Folds found so far, by collective: one of the same structure (another bucket) takes its fold.
  std::vector<std::pair<int, CollectiveFold>> found;
  auto fold_of = [&](int k) {
    if (!fold)
      return CollectiveFold{};
    const CollectiveRange& r = ranges[static_cast<std::size_t>(k)];
    for (const auto& [earlier, f] : found)
      if (fold_carries_over(g, ranges[static_cast<std::size_t>(earlier)], r))
        return f;
    found.emplace_back(k, fold_collective(topology, g, r));
    return found.back().second;
  };
  for (const std::size_t c : order)
    pool.run(g, distinct[c], fold_of(distinct[c]));
  IsolatedRuns out;
  for (std::size_t c = 0; c < distinct.size(); ++c) {
    IsolatedRun run = pool.take(distinct[c]);
    out.folded += run.simulated < size_of(c);
    out.tasks += run.simulated;
    out.whole += size_of(c);
    out.runs.push_back({std::move(run.offsets)});
  }
  return out;
}

/// The graph with each collective replaced by a join of its ranks' start dependencies and, per
/// rank, a delay of that rank's isolated time to its result; collectives marked in `expanded` keep
/// their tasks (they run flow by flow with the rest). `join[k]` receives collective k's join (-1
/// when expanded).
TaskGraph replayed_graph(const TaskGraph& g, const std::vector<int>& owner, const std::vector<const Isolated*>& runs,
                         const std::vector<char>& expanded, std::vector<int>& to_replayed, std::vector<int>& join)
{
  const auto& ranges = g.collectives();
  TaskGraph out;
  to_replayed.assign(static_cast<std::size_t>(g.size()), -1);
  join.assign(ranges.size(), -1);
  auto mapped = [&](const auto& deps) {
    TaskDeps m;
    for (int d : deps)
      m.push_back(to_replayed[static_cast<std::size_t>(d)]);
    std::sort(m.begin(), m.end());
    m.erase(std::unique(m.begin(), m.end()), m.end());
    return m;
  };
  for (int id = 0; id < g.size();) {
    const int k = owner[static_cast<std::size_t>(id)];
    if (k < 0 || expanded[static_cast<std::size_t>(k)]) {
      Task t = g[id];
      t.after = mapped(t.after);
      t.sender_joined = k < 0 || t.sender_joined < 0 ? -1 : to_replayed[static_cast<std::size_t>(t.sender_joined)];
      out.set_iteration(t.iteration);
      to_replayed[static_cast<std::size_t>(id)] = out.add(std::move(t));
      ++id;
      continue;
    }
    const CollectiveRange& r = ranges[static_cast<std::size_t>(k)];
    std::vector<int> starts;
    for (int i = r.first; i < r.end; ++i)
      for (int dep : g[i].after)
        if (dep < r.first)
          starts.push_back(dep);
    const Task& first_done = g[r.done[0]];
    out.set_iteration(first_done.iteration);
    Task gate;
    gate.kind = TaskKind::Delay;
    gate.device = first_done.device;
    gate.name = first_done.name.get() + " (replay: every rank has joined)";
    gate.category = first_done.category;
    gate.group = first_done.group;
    gate.after = mapped(starts);
    join[static_cast<std::size_t>(k)] = out.add(std::move(gate));
    for (int d : r.done) {
      if (to_replayed[static_cast<std::size_t>(d)] >= 0)
        continue;
      Task t = g[d];
      t.kind = TaskKind::Delay;
      t.seconds = runs[static_cast<std::size_t>(k)]->offsets[static_cast<std::size_t>(d - r.first)].end;
      t.after = {join[static_cast<std::size_t>(k)]};
      t.sender_joined = -1;
      t.src = t.dst = -1;
      t.bytes = 0;
      to_replayed[static_cast<std::size_t>(d)] = out.add(std::move(t));
    }
    id = r.end;
  }
  return out;
}

/// Rounds of the replay, each running in full the collectives found sharing links in the one before.
constexpr int kMaxRounds = 4;

}  // namespace

ReplayedRun simulate_with_replayed_collectives(const Topology& topology, const TaskGraph& graph, const ReplayOptions& options,
                                               IsolatedRunPool* pool)
{
  ReplayedRun out;
  const auto& ranges = graph.collectives();
  out.collectives = static_cast<int>(ranges.size());
  if (ranges.empty()) {
    out.why_not = "the plan has no collective";
    return out;
  }
  const std::vector<int> owner = collective_of_tasks(graph);
  if (const int t = reaches_inside(graph, owner); t >= 0) {
    out.why_not = fmt::format("'{}' waits on a collective's inner task", graph[t].name);
    return out;
  }
  // Distinct collectives by content; each instance points at the run of its first copy.
  std::unordered_map<std::size_t, std::vector<int>> by_hash;
  std::vector<int> distinct, run_of(ranges.size(), -1);
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (ranges[k].copy_of >= 0) {  // a copy of an earlier one (TaskGraph::mark_collective): no comparison
      run_of[k] = run_of[static_cast<std::size_t>(ranges[k].copy_of)];
      continue;
    }
    auto& candidates = by_hash[collective_content_hash(graph, ranges[k])];
    for (int c : candidates)
      if (same_content(graph, ranges[static_cast<std::size_t>(distinct[static_cast<std::size_t>(c)])], ranges[k]))
        run_of[k] = c;
    if (run_of[k] < 0) {
      run_of[k] = static_cast<int>(distinct.size());
      candidates.push_back(run_of[k]);
      distinct.push_back(static_cast<int>(k));
    }
  }
  out.distinct = static_cast<int>(distinct.size());
  std::optional<IsolatedRunPool> own;
  if (!pool)
    pool = &own.emplace(topology, options.fold, std::numeric_limits<int>::max());
  const IsolatedRuns isolated = simulate_isolated(topology, graph, distinct, options.fold, *pool);
  out.folded = isolated.folded;
  out.isolated_tasks = isolated.tasks;
  out.distinct_tasks = isolated.whole;
  std::vector<const Isolated*> runs;
  for (int c : run_of)
    runs.push_back(&isolated.runs[static_cast<std::size_t>(c)]);

  // Collectives that shared links with other traffic are run in full among the others, and the
  // check repeated on the new spans, until none does (or too many rounds: then the full run).
  std::vector<std::vector<LinkWindow>> links;  // per distinct collective: the directed links it crosses, when
  for (std::size_t c = 0; c < distinct.size(); ++c)
    links.push_back(link_windows_of(topology, graph, ranges[static_cast<std::size_t>(distinct[c])], isolated.runs[c].offsets));
  std::vector<char> expanded(ranges.size(), 0);
  bool settled = false;
  for (int round = 0; round < kMaxRounds && !settled; ++round) {
    std::vector<int> to_replayed, join;
    const TaskGraph replayed = replayed_graph(graph, owner, runs, expanded, to_replayed, join);
    const std::vector<Span> replayed_spans = simulate(topology, replayed);
    out.spans.resize(static_cast<std::size_t>(graph.size()));
    for (int id = 0; id < graph.size(); ++id) {
      const int k = owner[static_cast<std::size_t>(id)];
      if (k < 0 || expanded[static_cast<std::size_t>(k)]) {
        out.spans[static_cast<std::size_t>(id)] = replayed_spans[static_cast<std::size_t>(to_replayed[static_cast<std::size_t>(id)])];
        continue;
      }
      const double t0 = replayed_spans[static_cast<std::size_t>(join[static_cast<std::size_t>(k)])].end;
      const Span& offset = runs[static_cast<std::size_t>(k)]->offsets[static_cast<std::size_t>(id - ranges[static_cast<std::size_t>(k)].first)];
      out.spans[static_cast<std::size_t>(id)] = {t0 + offset.start, t0 + offset.end};
    }
    const Overlaps overlaps = overlapping_collectives(topology, graph, owner, expanded, run_of, links, out.spans);
    settled = overlaps.collectives.empty();
    if (out.why_not.empty())
      out.why_not = overlaps.first;
    for (int k : overlaps.collectives)
      expanded[static_cast<std::size_t>(k)] = 1;
  }
  out.expanded = static_cast<int>(std::count(expanded.begin(), expanded.end(), 1));
  out.applied = settled && out.expanded < out.collectives;
  if (!settled)
    out.why_not = fmt::format("collectives still shared links after {} rounds ({})", kMaxRounds, out.why_not);
  else if (!out.applied)
    out.why_not = fmt::format("every collective shared links with other traffic ({})", out.why_not);
  if (!out.applied)
    out.spans.clear();
  return out;
}

}  // namespace dtsim
