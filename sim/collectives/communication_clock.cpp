// See communication_clock.hpp.
#include "sim/collectives/communication_clock.hpp"

#include "sim/engine/collective_symmetry.hpp"

#include <stdexcept>

namespace dtsim {

namespace {

/// The content of a set as bytes: what makes it run the way it does (not its names).
std::string key_of(const std::vector<ClockedComm>& set)
{
  std::string key;
  const auto put = [&key](const auto& value) { key.append(reinterpret_cast<const char*>(&value), sizeof value); };
  for (const ClockedComm& c : set) {
    put(c.plain_transfer);
    put(c.call.op);
    put(c.call.bytes);
    put(c.call.root);
    put(c.call.ranks.size());
    for (const int r : c.call.ranks)
      put(r);
  }
  return key;
}

}  // namespace

CommunicationClock::CommunicationClock(const Topology& topology, const CollectiveOptions& options)
    : topology_(topology), options_(options), pool_(std::make_unique<IsolatedRunPool>(topology, true, 0))
{
  options_.memo = nullptr;
  options_.on_collective = nullptr;
}

CommunicationClock::~CommunicationClock() = default;

int CommunicationClock::add(const std::vector<ClockedComm>& set)
{
  if (set.empty())
    throw std::logic_error("CommunicationClock: an empty set");
  std::string key = key_of(set);
  if (const auto it = by_key_.find(key); it != by_key_.end())
    return it->second;
  Set s;
  const int start = graph_.add_delay(set.front().call.ranks.front(), 0.0, "set start", TaskCategory::Marker);
  const int first = graph_.size();
  std::vector<int> done_all;
  std::vector<int> position;
  for (const ClockedComm& c : set) {
    const int before = graph_.size();
    if (c.plain_transfer) {
      if (c.call.ranks.size() != 2)
        throw std::logic_error("CommunicationClock: a transfer between two devices expected");
      const int t = graph_.add_transfer(c.call.ranks[0], c.call.ranks[1], c.call.bytes, c.call.label, c.call.category, {start});
      s.done.push_back({t, t});
    } else {
      const std::vector<std::vector<int>> after(c.call.ranks.size(), std::vector<int>{start});
      s.done.push_back(add_collective(graph_, topology_, c.call, after, options_).done);
    }
    done_all.insert(done_all.end(), s.done.back().begin(), s.done.back().end());
    std::vector<double> sent(c.call.ranks.size(), 0.0), received(c.call.ranks.size(), 0.0);
    position.assign(topology_.devices().size(), -1);  // per device: its position in the call (-1: none)
    for (std::size_t p = 0; p < c.call.ranks.size(); ++p)
      position[static_cast<std::size_t>(c.call.ranks[p])] = static_cast<int>(p);
    for (int id = before; id < graph_.size(); ++id) {
      const Task& t = graph_[id];
      if (t.kind != TaskKind::Transfer || t.src == t.dst)
        continue;
      if (const int p = position[static_cast<std::size_t>(t.src)]; p >= 0)
        sent[static_cast<std::size_t>(p)] += t.bytes;
      if (const int p = position[static_cast<std::size_t>(t.dst)]; p >= 0)
        received[static_cast<std::size_t>(p)] += t.bytes;
    }
    s.sent.push_back(std::move(sent));
    s.received.push_back(std::move(received));
  }
  graph_.unmark_collectives_from(first);
  graph_.mark_collective(first, done_all);
  s.collective = static_cast<int>(graph_.collectives().size()) - 1;
  const CollectiveRange& range = graph_.collectives().back();
  tasks_ += range.end - range.first;
  pool_->run(graph_, s.collective, fold_collective(topology_, graph_, range));
  sets_.push_back(std::move(s));
  by_key_.emplace(std::move(key), static_cast<int>(sets_.size()) - 1);
  return static_cast<int>(sets_.size()) - 1;
}

void CommunicationClock::time(Set& set)
{
  if (set.timed)
    return;
  pool_->use_every_lane();
  const IsolatedRun run = pool_->take(set.collective);
  simulated_ += run.simulated;
  const CollectiveRange& range = graph_.collectives()[static_cast<std::size_t>(set.collective)];
  for (const auto& item : set.done) {
    std::vector<double> seconds;
    for (const int d : item)
      seconds.push_back(run.offsets[static_cast<std::size_t>(d - range.first)].end);
    set.seconds.push_back(std::move(seconds));
  }
  set.timed = true;
}

double CommunicationClock::seconds(int id, int item, int position)
{
  Set& s = sets_.at(static_cast<std::size_t>(id));
  time(s);
  return s.seconds.at(static_cast<std::size_t>(item)).at(static_cast<std::size_t>(position));
}

double CommunicationClock::bytes_sent(int id, int item, int position) const
{
  const Set& s = sets_.at(static_cast<std::size_t>(id));
  return s.sent.at(static_cast<std::size_t>(item)).at(static_cast<std::size_t>(position));
}

double CommunicationClock::bytes_received(int id, int item, int position) const
{
  const Set& s = sets_.at(static_cast<std::size_t>(id));
  return s.received.at(static_cast<std::size_t>(item)).at(static_cast<std::size_t>(position));
}

}  // namespace dtsim
