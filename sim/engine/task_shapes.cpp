#include "sim/engine/task_shapes.hpp"

#include <boost/container_hash/hash.hpp>

namespace dtsim {

std::size_t hash_of(const Shape& s)
{
  std::size_t h = 0;
  boost::hash_combine(h, static_cast<int>(s.kind));
  boost::hash_combine(h, s.device);
  boost::hash_combine(h, s.src);
  boost::hash_combine(h, s.dst);
  boost::hash_combine(h, s.joined);
  boost::hash_combine(h, s.seconds);
  boost::hash_combine(h, s.bytes);
  boost::hash_combine(h, s.rate_cap);
  boost::hash_combine(h, s.link_latency);
  boost::hash_range(h, s.after.begin(), s.after.end());
  return h;
}

Shapes shapes_of(const TaskGraph& g, const CollectiveRange& r)
{
  const int n = r.end - r.first;
  Shapes out;
  out.of.reserve(static_cast<std::size_t>(n));
  out.alias.resize(static_cast<std::size_t>(n));
  out.next_of_hash.assign(static_cast<std::size_t>(n), -1);
  out.by_hash.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Task& t = g[r.first + i];
    out.of.push_back(shape_of(t, r, [](int d) { return d; },
                              [&](int o) { return o < i ? out.alias[static_cast<std::size_t>(o)] : o; }));
    int& alias = out.alias[static_cast<std::size_t>(i)];
    alias = i;
    const std::size_t h = hash_of(out.of.back());
    if (is_timer(t) || t.kind == TaskKind::Transfer)
      out.each_of_hash(h, [&](int j) {
        if (out.of[static_cast<std::size_t>(j)] == out.of.back())
          alias = j;
        return alias != i;
      });
    if (alias != i)
      continue;
    const auto [it, fresh] = out.by_hash.try_emplace(h, i, i);
    if (!fresh) {
      out.next_of_hash[static_cast<std::size_t>(it->second.second)] = i;
      it->second.second = i;
    }
  }
  return out;
}

}  // namespace dtsim
