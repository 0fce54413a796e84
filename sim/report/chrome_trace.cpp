#include "sim/report/chrome_trace.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/number_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace dtsim {

namespace {

using nlohmann::json;

enum class Stream { Compute = 0, Sends = 1, LinkForward = 2, LinkBackward = 3 };

/// A thread of the trace before lanes: a device's compute or sends, or one direction of a link.
struct TrackKey {
  int pid;
  int index;      ///< device index (Compute, Sends) or link index (LinkForward, LinkBackward)
  Stream stream;
  auto sort_key() const { return std::tuple(pid, stream >= Stream::LinkForward, index, stream); }
  bool operator<(const TrackKey& o) const { return sort_key() < o.sort_key(); }
};

struct Slice {
  int task;
  double start, end;
};

/// Microseconds, rounded to the nanosecond (the trace format's unit; shorter text).
double micros(double seconds)
{
  return std::round(seconds * 1e9) / 1e3;
}

class TraceWriter {
public:
  TraceWriter(const Topology& topo, const TaskGraph& graph, const std::vector<Span>& spans, const TraceOptions& o)
      : topo_(topo), graph_(graph), spans_(spans), options_(o)
  {
    for (const Device& d : topo.devices())
      fabric_pid_ = std::max(fabric_pid_, d.node + 2);
    iterations_ = 0;
    for (const Task& t : graph.tasks())
      iterations_ = std::max(iterations_, t.iteration + 1);
  }

  std::string write()
  {
    collect();
    std::map<int, std::string> processes;
    for (const auto& [key, slices] : tracks_)
      processes[key.pid] = key.pid == fabric_pid_ ? "network fabric" : fmt::format("node {}", key.pid - 1);

    json other = {{"generator", "dtsim"},
                  {"clock", "simulated time"},
                  {"iterations_simulated", iterations_},
                  {"iterations_traced", fmt::format("{}-{}", options_.first_iteration, last_iteration())},
                  {"setup_traced", options_.first_iteration == 0}};
    out_ = "{\"displayTimeUnit\":\"ms\",\"otherData\":" + other.dump() + ",\"traceEvents\":[";
    for (const auto& [pid, name] : processes) {
      emit({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", name}}}});
      emit({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"}, {"args", {{"sort_index", pid}}}});
    }
    for (auto& [key, slices] : tracks_)
      write_track(key, slices);
    write_flows();
    write_counters();
    out_ += "\n]}\n";
    return std::move(out_);
  }

private:
  const Topology& topo_;
  const TaskGraph& graph_;
  const std::vector<Span>& spans_;
  TraceOptions options_;
  int fabric_pid_ = 1;
  int iterations_ = 0;
  std::map<TrackKey, std::vector<Slice>> tracks_;
  std::vector<char> shown_;                      ///< per task: drawn as a slice
  std::map<int, std::pair<int, int>> placed_;    ///< task -> (pid, tid) of its compute/send slice
  std::string out_;
  bool first_event_ = true;
  int next_tid_ = 0;

  int last_iteration() const
  {
    return options_.last_iteration < 0 ? iterations_ - 1 : options_.last_iteration;
  }

  int pid_of_device(int device) const
  {
    const int node = topo_.device(device).node;
    return node >= 0 ? node + 1 : fabric_pid_;
  }

  bool selected(int id) const
  {
    const Task& t = graph_[id];
    if (id <= options_.setup_end)
      return options_.first_iteration == 0;
    return t.iteration >= options_.first_iteration && t.iteration <= last_iteration();
  }

  void collect()
  {
    shown_.assign(static_cast<std::size_t>(graph_.size()), 0);
    for (int id = 0; id < graph_.size(); ++id) {
      const Task& t = graph_[id];
      const Span& s = spans_[static_cast<std::size_t>(id)];
      if (s.end <= s.start || t.category == TaskCategory::Marker || !selected(id))
        continue;
      shown_[static_cast<std::size_t>(id)] = 1;
      if (t.kind != TaskKind::Transfer) {
        tracks_[{pid_of_device(t.device), t.device, Stream::Compute}].push_back({id, s.start, s.end});
        continue;
      }
      tracks_[{pid_of_device(t.src), t.src, Stream::Sends}].push_back({id, s.start, s.end});
      for (const Hop& hop : topo_.route(t.src, t.dst)) {
        const Link& l = topo_.link(hop.link);
        const int from = hop.forward ? l.a : l.b, to = hop.forward ? l.b : l.a;
        const int pid = topo_.device(from).node >= 0 ? pid_of_device(from) : pid_of_device(to);
        tracks_[{pid, hop.link, hop.forward ? Stream::LinkForward : Stream::LinkBackward}].push_back({id, s.start, s.end});
      }
    }
  }

  std::string track_name(const TrackKey& key) const
  {
    if (key.stream == Stream::Compute || key.stream == Stream::Sends) {
      const Device& d = topo_.device(key.index);
      if (key.stream == Stream::Sends)
        return d.name + " sends";
      return d.kind == DeviceKind::Gpu ? d.name + " compute" : d.name;
    }
    const Link& l = topo_.link(key.index);
    const auto& a = topo_.device(l.a).name;
    const auto& b = topo_.device(l.b).name;
    return key.stream == Stream::LinkForward ? fmt::format("{} {} -> {}", to_string(l.kind), a, b)
                                             : fmt::format("{} {} -> {}", to_string(l.kind), b, a);
  }

  void emit(const json& event)
  {
    out_ += first_event_ ? "\n" : ",\n";
    first_event_ = false;
    out_ += event.dump();
  }

  /// A link's slices carry the bytes only: the sender's slice names the two ends.
  json slice_args(const Task& t, Stream stream) const
  {
    if (stream == Stream::LinkForward || stream == Stream::LinkBackward)
      return {{"bytes", t.bytes}};
    json args = {{"iteration", t.iteration}};
    if (t.kind == TaskKind::Transfer) {
      args["bytes"] = t.bytes;
      args["from"] = topo_.device(t.src).name;
      args["to"] = topo_.device(t.dst).name;
    }
    if (t.group >= 0)
      args["group"] = t.group;
    return args;
  }

  void write_track(const TrackKey& key, std::vector<Slice>& slices)
  {
    std::sort(slices.begin(), slices.end(),
              [](const Slice& a, const Slice& b) { return std::tie(a.start, a.task) < std::tie(b.start, b.task); });
    std::vector<double> lane_end;  // greedy interval partitioning: the first lane free at this start
    std::vector<int> lane_tid;
    const std::string name = track_name(key);
    for (const Slice& s : slices) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > s.start + 1e-12)
        ++lane;
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        lane_tid.push_back(++next_tid_);
        emit({{"ph", "M"}, {"pid", key.pid}, {"tid", next_tid_}, {"name", "thread_name"},
              {"args", {{"name", lane == 0 ? name : fmt::format("{} ({})", name, lane + 1)}}}});
        emit({{"ph", "M"}, {"pid", key.pid}, {"tid", next_tid_}, {"name", "thread_sort_index"},
              {"args", {{"sort_index", next_tid_}}}});
      }
      lane_end[lane] = s.end;
      const Task& t = graph_[s.task];
      if (key.stream == Stream::Compute || key.stream == Stream::Sends)
        placed_[s.task] = {key.pid, lane_tid[lane]};
      emit({{"ph", "X"}, {"pid", key.pid}, {"tid", lane_tid[lane]}, {"name", t.name}, {"cat", to_string(t.category)},
            {"ts", micros(s.start)}, {"dur", micros(s.end - s.start)}, {"args", slice_args(t, key.stream)}});
    }
  }

  /// The first-starting shown task on `device` that waited for `transfer`, looking through hidden
  /// (zero-length, marker) tasks; -1 when none.
  int receive_of(int transfer, const std::vector<std::vector<int>>& successors) const
  {
    const int device = graph_[transfer].dst;
    constexpr std::size_t kMaxVisited = 64;  // joins fan out to every rank: look no further
    std::vector<int> todo = successors[static_cast<std::size_t>(transfer)];
    std::set<int> seen(todo.begin(), todo.end());
    int best = -1;
    for (std::size_t i = 0; i < todo.size() && seen.size() <= kMaxVisited; ++i) {
      const int id = todo[i];
      const Task& t = graph_[id];
      if (shown_[static_cast<std::size_t>(id)]) {
        const int on = t.kind == TaskKind::Transfer ? t.src : t.device;
        if (on == device && (best < 0 || spans_[static_cast<std::size_t>(id)].start <
                                             spans_[static_cast<std::size_t>(best)].start))
          best = id;
        continue;
      }
      if (spans_[static_cast<std::size_t>(id)].end > spans_[static_cast<std::size_t>(id)].start && t.category != TaskCategory::Marker)
        continue;  // a task of another iteration: not followed
      for (int next : successors[static_cast<std::size_t>(id)])
        if (seen.insert(next).second)
          todo.push_back(next);
    }
    return best;
  }

  void write_flows()
  {
    std::vector<std::vector<int>> successors(static_cast<std::size_t>(graph_.size()));
    for (int id = 0; id < graph_.size(); ++id)
      for (int before : graph_[id].after)
        successors[static_cast<std::size_t>(before)].push_back(id);
    for (int id = 0; id < graph_.size(); ++id) {
      if (!shown_[static_cast<std::size_t>(id)] || graph_[id].kind != TaskKind::Transfer)
        continue;
      const int receive = receive_of(id, successors);
      if (receive < 0)
        continue;
      const auto [send_pid, send_tid] = placed_.at(id);
      const auto [recv_pid, recv_tid] = placed_.at(receive);
      emit({{"ph", "s"}, {"id", id}, {"name", "data"}, {"cat", "flow"}, {"pid", send_pid}, {"tid", send_tid},
            {"ts", micros(spans_[static_cast<std::size_t>(id)].start)}});
      emit({{"ph", "f"}, {"bp", "e"}, {"id", id}, {"name", "data"}, {"cat", "flow"}, {"pid", recv_pid},
            {"tid", recv_tid}, {"ts", micros(spans_[static_cast<std::size_t>(receive)].start)}});
    }
  }

  void write_counters()
  {
    for (const auto& [key, slices] : tracks_) {
      if (key.stream != Stream::LinkForward && key.stream != Stream::LinkBackward)
        continue;
      const Link& link = topo_.link(key.index);
      std::vector<std::pair<double, double>> steps;  // (time, change of the summed mean rate)
      for (const Slice& s : slices) {
        const double rate = graph_[s.task].bytes / (s.end - s.start);
        steps.emplace_back(s.start, rate);
        steps.emplace_back(s.end, -rate);
      }
      std::sort(steps.begin(), steps.end());
      const std::string name = track_name(key) + " utilisation";
      double rate = 0, last = -1;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        rate += steps[i].second;
        if (i + 1 < steps.size() && steps[i + 1].first == steps[i].first)
          continue;  // one point per instant
        const double percent = std::clamp(std::round(1000 * rate / link.bandwidth) / 10, 0.0, 100.0);
        if (percent == last)
          continue;  // a counter holds its value until the next point
        last = percent;
        emit({{"ph", "C"}, {"pid", key.pid}, {"name", name}, {"ts", micros(steps[i].first)},
              {"args", {{"percent", percent}}}});
      }
    }
  }
};

}  // namespace

std::string chrome_trace(const Topology& topology, const TaskGraph& graph, const std::vector<Span>& spans,
                         const TraceOptions& options)
{
  return TraceWriter(topology, graph, spans, options).write();
}

TraceOptions trace_options(const std::string& spec, const Plan& plan)
{
  const int n = static_cast<int>(plan.iteration_end.size());
  TraceOptions o;
  o.setup_end = plan.setup_end;
  if (spec == "all")
    return o;
  const auto fail = [&] {
    throw InputError("--trace-iterations", "",
                     fmt::format("expected all, a count K of last iterations (1 to {0}) or a range A-B of iterations "
                                 "(0 to {1}; the scenario simulates {0}), got \"{2}\"",
                                 n, n - 1, spec));
  };
  if (const auto dash = spec.find('-'); dash != std::string::npos) {
    const auto a = parse_int(std::string_view(spec).substr(0, dash), 0, n - 1);
    const auto b = parse_int(std::string_view(spec).substr(dash + 1), 0, n - 1);
    if (!a || !b || *a > *b)
      fail();
    o.first_iteration = static_cast<int>(*a);
    o.last_iteration = static_cast<int>(*b);
    return o;
  }
  const auto k = parse_int(spec, 1, n);
  if (!k)
    fail();
  o.first_iteration = n - static_cast<int>(*k);
  return o;
}

}  // namespace dtsim
