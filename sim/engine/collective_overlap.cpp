#include "sim/engine/collective_overlap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace dtsim {

std::vector<LinkWindow> link_windows_of(const Topology& topology, const TaskGraph& g, const CollectiveRange& r,
                                 const std::vector<Span>& spans)
{
  double first = std::numeric_limits<double>::infinity();
  for (const Span& s : spans)
    first = std::min(first, s.start);
  std::vector<int> index(2 * topology.links().size(), -1);  // directed link -> its entry
  std::vector<LinkWindow> out;
  for (int id = r.first; id < r.end; ++id) {
    const Task& t = g[id];
    if (t.kind != TaskKind::Transfer)
      continue;
    const Span& s = spans[static_cast<std::size_t>(id - r.first)];
    for (const Hop& h : topology.route(t.src, t.dst)) {
      int& at = index[static_cast<std::size_t>(directed_link(h))];
      if (at < 0) {
        at = static_cast<int>(out.size());
        out.push_back({directed_link(h), s.start - first, s.end - first});
      }
      LinkWindow& use = out[static_cast<std::size_t>(at)];
      use.from = std::min(use.from, s.start - first);
      use.to = std::max(use.to, s.end - first);
    }
  }
  return out;
}

Overlaps overlapping_collectives(const Topology& topology, const TaskGraph& g, const std::vector<int>& owner,
                                 const std::vector<char>& expanded, const std::vector<int>& run_of,
                                 const std::vector<std::vector<LinkWindow>>& links, const std::vector<Span>& spans)
{
  const auto& ranges = g.collectives();
  struct Busy {
    double start, end;
    int who;  ///< replayed collective index, or -(task id) - 1 for any other transfer
  };
  std::unordered_map<int, std::vector<Busy>> by_link;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (expanded[k])
      continue;
    const CollectiveRange& r = ranges[k];
    double start = std::numeric_limits<double>::infinity();
    for (int id = r.first; id < r.end; ++id)
      start = std::min(start, spans[static_cast<std::size_t>(id)].start);
    for (const LinkWindow& use : links[static_cast<std::size_t>(run_of[k])])
      by_link[use.key].push_back({start + use.from, start + use.to, static_cast<int>(k)});
  }
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g[id];
    const Span& s = spans[static_cast<std::size_t>(id)];
    const int k = owner[static_cast<std::size_t>(id)];
    if ((k >= 0 && !expanded[static_cast<std::size_t>(k)]) || t.kind != TaskKind::Transfer || !(s.end > s.start))
      continue;
    for (const Hop& h : topology.route(t.src, t.dst))
      if (auto it = by_link.find(directed_link(h)); it != by_link.end())
        it->second.push_back({s.start, s.end, -id - 1});
  }
  // Overlaps shorter than this are rounding, not sharing (spans come from sums of doubles).
  constexpr double kSlack = 1e-12;
  auto name_of = [&](int who) {
    return who >= 0 ? g[ranges[static_cast<std::size_t>(who)].done[0]].name : g[-who - 1].name;
  };
  Overlaps out;
  std::vector<char> listed(ranges.size(), 0);
  auto offends = [&](int who) {
    if (who >= 0 && !listed[static_cast<std::size_t>(who)]) {
      listed[static_cast<std::size_t>(who)] = 1;
      out.collectives.push_back(who);
    }
  };
  for (auto& [key, busy] : by_link) {
    std::sort(busy.begin(), busy.end(), [](const Busy& a, const Busy& b) { return a.start < b.start; });
    Busy any{0, -std::numeric_limits<double>::infinity(), 0}, collective = any;
    for (const Busy& b : busy) {
      const Busy& against = b.who >= 0 ? any : collective;
      if (b.start < against.end - kSlack && against.who != b.who) {
        if (out.first.empty())
          out.first = fmt::format("'{}' and '{}' shared link {} ({}) while the collective ran", name_of(against.who),
                                  name_of(b.who), topology.link(key / 2).name, key % 2 ? "forward" : "backward");
        offends(against.who);
        offends(b.who);
      }
      if (b.end > any.end)
        any = b;
      if (b.who >= 0 && b.end > collective.end)
        collective = b;
    }
  }
  std::sort(out.collectives.begin(), out.collectives.end());
  return out;
}

}  // namespace dtsim
