#include "sim/report/chrome_trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <tuple>

namespace dtsim {

namespace {

constexpr int kGpuProcess = 1;
constexpr int kLinkProcess = 2;

struct Event {
  int task;
  double start;
  double end;
  std::string args;  // JSON object text
};

struct TrackKey {
  int process;
  int index;      // device or link index
  int sub;        // GPU: 0 compute, 1 sends; link: 0 a->b, 1 b->a
  auto operator<=>(const TrackKey&) const = default;
};

std::string quoted(const std::string& s)
{
  return nlohmann::json(s).dump();
}

std::string track_name(const Topology& topo, const TrackKey& key)
{
  if (key.process == kGpuProcess) {
    const auto& d = topo.devices()[static_cast<std::size_t>(key.index)];
    return fmt::format("{} {}", d.name, key.sub == 0 ? "compute" : "sends");
  }
  const auto& l = topo.links()[static_cast<std::size_t>(key.index)];
  const auto& a = topo.devices()[static_cast<std::size_t>(l.a)].name;
  const auto& b = topo.devices()[static_cast<std::size_t>(l.b)].name;
  return key.sub == 0 ? fmt::format("{} {} -> {}", to_string(l.kind), a, b)
                      : fmt::format("{} {} -> {}", to_string(l.kind), b, a);
}

}  // namespace

std::string chrome_trace(const Topology& topo, const TaskGraph& graph, const std::vector<Span>& spans)
{
  std::map<TrackKey, std::vector<Event>> tracks;
  for (int id = 0; id < graph.size(); ++id) {
    const Task& t = graph[id];
    const Span& s = spans[static_cast<std::size_t>(id)];
    if (s.end <= s.start || t.category == "marker")
      continue;
    if (t.kind != TaskKind::Transfer) {
      tracks[{kGpuProcess, t.device, 0}].push_back({id, s.start, s.end, "{}"});
      continue;
    }
    const std::string args = fmt::format("{{\"bytes\":{:.0f},\"from\":{},\"to\":{}}}", t.bytes,
                                         quoted(topo.devices()[static_cast<std::size_t>(t.src)].name),
                                         quoted(topo.devices()[static_cast<std::size_t>(t.dst)].name));
    tracks[{kGpuProcess, t.src, 1}].push_back({id, s.start, s.end, args});
    for (const Hop& hop : topo.route(t.src, t.dst))
      tracks[{kLinkProcess, hop.link, hop.forward ? 0 : 1}].push_back({id, s.start, s.end, args});
  }

  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out += fmt::format("{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"GPUs\"}}}},\n", kGpuProcess);
  out += fmt::format("{{\"ph\":\"M\",\"pid\":{},\"name\":\"process_name\",\"args\":{{\"name\":\"links\"}}}}", kLinkProcess);
  int tid = 0;
  for (auto& [key, events] : tracks) {
    std::sort(events.begin(), events.end(),
              [](const Event& a, const Event& b) { return std::tie(a.start, a.task) < std::tie(b.start, b.task); });
    std::vector<double> lane_end;  // greedy interval partitioning: first lane free at this start
    std::vector<int> lane_tid;
    for (const Event& e : events) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > e.start + 1e-12)
        ++lane;
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        lane_tid.push_back(++tid);
        const std::string name = track_name(topo, key) + (lane == 0 ? "" : fmt::format(" ({})", lane + 1));
        out += fmt::format(",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}}",
                           key.process, tid, quoted(name));
        out += fmt::format(",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{}}}}}",
                           key.process, tid, tid);
      }
      lane_end[lane] = e.end;
      const Task& t = graph[e.task];
      out += fmt::format(",\n{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"name\":{},\"cat\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{}}}",
                         key.process, lane_tid[lane], quoted(t.name), quoted(t.category), e.start * 1e6,
                         (e.end - e.start) * 1e6, e.args);
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace dtsim
