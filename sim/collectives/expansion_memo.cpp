#include "sim/collectives/expansion_memo.hpp"

#include "sim/collectives/collective_options.hpp"

#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <cstring>

namespace dtsim {

namespace {

// NcclParams holds doubles only (and arrays of them): equal objects are equal bytes, NaN included
// (an unset per-class scale is NaN).
static_assert(sizeof(NcclParams) % sizeof(double) == 0);

bool same_params(const std::optional<NcclParams>& a, const std::optional<NcclParams>& b)
{
  if (a.has_value() != b.has_value())
    return false;
  return !a || std::memcmp(&*a, &*b, sizeof(NcclParams)) == 0;
}

}  // namespace

bool ExpansionKey::operator==(const ExpansionKey& o) const
{
  return topology == o.topology && call.op == o.call.op && call.bytes == o.call.bytes && call.root == o.call.root &&
         call.ranks == o.call.ranks && call.label == o.call.label && call.category == o.call.category &&
         filter.algos == o.filter.algos && filter.protos == o.filter.protos && same_params(params, o.params) &&
         ideal == o.ideal && gpus_per_thread == o.gpus_per_thread && group == o.group;
}

ExpansionKey ExpansionMemo::key_of(const TaskGraph& graph, const Topology& topology, const CollectiveCall& call,
                                   const CollectiveOptions& options)
{
  return {&topology, call, options.filter, options.params, options.ideal, options.gpus_per_thread, graph.group()};
}

std::size_t ExpansionMemo::hash(const ExpansionKey& key)
{
  std::size_t h = 0;
  boost::hash_combine(h, static_cast<int>(key.call.op));
  boost::hash_combine(h, key.call.bytes);
  boost::hash_combine(h, key.call.label);
  boost::hash_combine(h, key.call.ranks.size());
  boost::hash_combine(h, key.call.ranks.empty() ? -1 : key.call.ranks.front());
  boost::hash_combine(h, key.group);
  return h;
}

std::optional<CollectiveTasks> ExpansionMemo::append_copy(TaskGraph& graph, const ExpansionKey& key,
                                                          const std::vector<std::vector<int>>& start_after)
{
  const auto bucket = entries_.find(hash(key));
  if (bucket == entries_.end())
    return std::nullopt;
  const auto entry = std::find_if(bucket->second.begin(), bucket->second.end(),
                                  [&](const Entry& e) { return e.key == key && e.graph == &graph; });
  if (entry == bucket->second.end() || start_after.size() != entry->ranks)
    return std::nullopt;
  const int first = graph.size();
  const int shift = first - entry->first;
  // A copy whose start tasks wait on as many tasks as the original's runs as it does on its own.
  bool alike = true;
  for (std::size_t i = 0; i < entry->ranks; ++i)
    alike = alike && graph[entry->first + static_cast<int>(i)].after.size() == start_after[i].size();
  for (int i = 0; i < entry->end - entry->first; ++i) {
    Task t = graph[entry->first + i];  // a copy, taken before add() may move the tasks
    if (static_cast<std::size_t>(i) < entry->ranks)
      t.after.assign(start_after[static_cast<std::size_t>(i)].begin(), start_after[static_cast<std::size_t>(i)].end());
    else
      for (int& dep : t.after)
        dep += shift;
    if (t.sender_joined >= 0)
      t.sender_joined += shift;
    graph.add(std::move(t));
  }
  CollectiveTasks out = entry->result;
  for (int& d : out.done)
    d += shift;
  graph.mark_collective(first, out.done, alike ? entry->first : -1);
  ++copies_;
  return out;
}

void ExpansionMemo::remember(const TaskGraph& graph, ExpansionKey key, int first,
                             const std::vector<std::vector<int>>& start_after, const CollectiveTasks& added)
{
  const std::size_t ranks = start_after.size();
  if (graph.size() - first < static_cast<int>(ranks))
    return;
  for (int id = first; id < graph.size(); ++id) {
    const Task& t = graph[id];
    const auto i = static_cast<std::size_t>(id - first);
    if (i < ranks) {
      if (!std::equal(t.after.begin(), t.after.end(), start_after[i].begin(), start_after[i].end()))
        return;
    } else if (std::any_of(t.after.begin(), t.after.end(), [&](int dep) { return dep < first; })) {
      return;
    }
    if (t.sender_joined >= 0 && t.sender_joined < first)
      return;
  }
  if (std::any_of(added.done.begin(), added.done.end(), [&](int d) { return d < first; }))
    return;
  entries_[hash(key)].push_back({std::move(key), &graph, first, graph.size(), ranks, added});
}

}  // namespace dtsim
