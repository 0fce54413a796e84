#include "sim/report/timeline.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace dtsim {

namespace {

std::string link_name(const Topology& topo, int link, bool forward)
{
  const auto& l = topo.links()[static_cast<std::size_t>(link)];
  const auto& a = topo.device(l.a).name;
  const auto& b = topo.device(l.b).name;
  return fmt::format("{} {} -> {}", to_string(l.kind), forward ? a : b, forward ? b : a);
}

// Sorted by start; neighbours of one category closer than `resolution` become one block (a ring's
// hundreds of steps read as one collective at the page's scale; the tooltip counts them).
std::vector<TimelineBlock> merged(std::vector<TimelineBlock> blocks, double resolution)
{
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<TimelineBlock> out;
  std::vector<int> count;
  for (auto& b : blocks) {
    if (!out.empty() && out.back().category == b.category && b.start <= out.back().end + resolution) {
      out.back().end = std::max(out.back().end, b.end);
      ++count.back();
      continue;
    }
    out.push_back(std::move(b));
    count.push_back(1);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (count[i] > 1)
      out[i].label += fmt::format(" (+{} more)", count[i] - 1);
    out[i].label += fmt::format(": {:.3f} - {:.3f} ms", out[i].start * 1e3, out[i].end * 1e3);
  }
  return out;
}

double end_of(const Plan& plan, const std::vector<Span>& spans, int iteration)
{
  return spans[static_cast<std::size_t>(plan.iteration_end[static_cast<std::size_t>(iteration)])].end;
}

bool is_gpu(const Topology& topo, int device)
{
  return topo.device(device).kind == DeviceKind::Gpu;
}

}  // namespace

Timeline build_timeline(const Topology& topo, const Plan& plan, const std::vector<Span>& spans,
                        const TimelineOptions& options)
{
  const int iterations = static_cast<int>(plan.iteration_end.size());
  if (iterations < 2)
    throw std::logic_error("build_timeline: needs two simulated iterations");
  Timeline tl;
  tl.iteration = iterations - 1;
  tl.start_s = end_of(plan, spans, iterations - 2);
  const double t1 = end_of(plan, spans, iterations - 1);
  tl.length_s = t1 - tl.start_s;
  const double resolution = options.resolution_s > 0 ? options.resolution_s : tl.length_s / 2000;

  std::vector<int> shown;
  if (options.gpu_ranks.empty() && plan.stage_devices.size() > 1) {
    // A pipeline: one GPU per stage (its first, up to 16 stages), so the rows draw the schedule.
    for (std::size_t s = 0; s < plan.stage_devices.size() && s < 16; ++s)
      shown.push_back(plan.stage_devices[s]);
  } else if (options.gpu_ranks.empty()) {
    for (std::size_t r = 0; r < plan.ranks.size() && r < 8; ++r)
      shown.push_back(plan.ranks[r]);
  } else if (plan.folded_from_gpus == 0) {
    for (const int r : options.gpu_ranks)
      if (r >= 0 && r < static_cast<int>(plan.ranks.size()))
        shown.push_back(plan.ranks[static_cast<std::size_t>(r)]);
  } else {
    // Folded (plan.hpp folded_from_gpus): --gpus-shown names the scenario's ranks, rank r being
    // topology.gpus()[r] (pick_ranks), and only the representatives in plan.ranks have a timeline. A
    // representative asked for is drawn; every rank asked for ("all", 0-63) draws every representative.
    // A rank folded away has no timeline of its own: drawing its representative under another GPU's
    // name would mislead, so it is refused (exit 2), naming the ranks that are simulated.
    const auto& gpus = topo.gpus();
    std::vector<int> simulated_ranks;  // the representatives' ranks
    for (const int d : plan.ranks) {
      const auto at = std::find(gpus.begin(), gpus.end(), d);
      simulated_ranks.push_back(static_cast<int>(at - gpus.begin()));
    }
    const std::set<int> asked(options.gpu_ranks.begin(), options.gpu_ranks.end());
    if (static_cast<int>(asked.size()) == plan.folded_from_gpus && *asked.begin() == 0 &&
        *asked.rbegin() == plan.folded_from_gpus - 1) {
      shown = plan.ranks;
    } else {
      for (const int r : options.gpu_ranks) {
        const auto at = std::find(simulated_ranks.begin(), simulated_ranks.end(), r);
        if (at == simulated_ranks.end())
          throw InputError("--gpus-shown", "",
                           fmt::format("rank {} is folded (ranks running the same schedule are simulated once: ranks {} "
                                       "of the {} are): expected one of those, or all (or simulation.ranks \"all\" to "
                                       "simulate every GPU)",
                                       r, fmt::join(simulated_ranks, ", "), plan.folded_from_gpus));
        shown.push_back(plan.ranks[static_cast<std::size_t>(at - simulated_ranks.begin())]);
      }
    }
  }
  const std::set<int> shown_set(shown.begin(), shown.end());
  tl.gpus_total = static_cast<int>(plan.ranks.size());
  tl.folded_from_gpus = plan.folded_from_gpus;
  tl.gpus_shown = static_cast<int>(shown.size());

  std::map<int, std::vector<TimelineBlock>> compute, comm;
  std::map<std::pair<int, bool>, std::vector<TimelineBlock>> links;
  std::map<std::pair<int, bool>, std::vector<Span>> link_busy;
  const auto& tasks = plan.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    const Span& s = spans[i];
    if (s.end <= s.start || s.end <= tl.start_s || s.start >= t1 || t.category == TaskCategory::Marker)
      continue;
    TimelineBlock b{std::max(s.start, tl.start_s) - tl.start_s, std::min(s.end, t1) - tl.start_s, t.category, t.name};
    if (t.kind == TaskKind::Delay) {
      // A folded plan's communication (is_communication), timed on its own: on its GPU's row, on no link.
      if (is_communication(t) && shown_set.count(t.device))
        comm[t.device].push_back(b);
      continue;
    }
    if (t.kind == TaskKind::Compute) {
      if (shown_set.count(t.device))
        compute[t.device].push_back(b);
      continue;
    }
    if (t.src == t.dst)
      continue;
    const bool mine = shown_set.count(t.src) || (shown_set.count(t.dst) && !is_gpu(topo, t.src));
    if (mine)
      comm[shown_set.count(t.src) ? t.src : t.dst].push_back(b);
    if (!shown_set.count(t.src) && !shown_set.count(t.dst))
      continue;
    for (const Hop& hop : topo.route(t.src, t.dst)) {
      links[{hop.link, hop.forward}].push_back(b);
      link_busy[{hop.link, hop.forward}].push_back({b.start, b.end});
    }
  }
  for (const int d : shown) {
    const auto& name = topo.device(d).name;
    tl.rows.push_back({name + " compute", true, merged(compute[d], resolution)});
    tl.rows.push_back({name + " transfers", false, merged(comm[d], resolution)});
  }
  std::vector<std::pair<double, std::pair<int, bool>>> busiest;
  for (auto& [key, busy] : link_busy)
    busiest.push_back({union_length(busy), key});
  std::sort(busiest.begin(), busiest.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  tl.links_busy = static_cast<int>(busiest.size());
  if (static_cast<int>(busiest.size()) > options.max_links)
    busiest.resize(static_cast<std::size_t>(std::max(options.max_links, 0)));
  std::sort(busiest.begin(), busiest.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  tl.links_shown = static_cast<int>(busiest.size());
  for (const auto& [busy, key] : busiest)
    tl.rows.push_back({link_name(topo, key.first, key.second), false, merged(links[key], resolution)});
  return tl;
}

std::vector<LinkUse> link_utilisation(const Topology& topo, const Plan& plan, const std::vector<Span>& spans,
                                      double iteration_time_s)
{
  const int iterations = static_cast<int>(plan.iteration_end.size());
  const int measured = iterations - plan.warmup_iterations;
  if (measured <= 0 || !(iteration_time_s > 0))
    return {};
  std::map<std::pair<int, bool>, double> bytes;
  std::map<std::pair<int, bool>, std::vector<Span>> busy;
  const auto& tasks = plan.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.kind != TaskKind::Transfer || t.src == t.dst || t.iteration < plan.warmup_iterations ||
        static_cast<int>(i) <= plan.setup_end)
      continue;
    for (const Hop& hop : topo.route(t.src, t.dst)) {
      bytes[{hop.link, hop.forward}] += t.bytes;
      busy[{hop.link, hop.forward}].push_back(spans[i]);
    }
  }
  std::vector<LinkUse> out;
  for (const auto& [key, b] : bytes) {
    const auto& l = topo.links()[static_cast<std::size_t>(key.first)];
    LinkUse u{link_name(topo, key.first, key.second), to_string(l.kind), l.bandwidth, b / measured};
    u.busy_fraction = std::min(1.0, union_length(busy[key]) / measured / iteration_time_s);
    u.utilisation = l.bandwidth > 0 ? u.bytes_per_iteration / (l.bandwidth * iteration_time_s) : 0;
    out.push_back(std::move(u));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.utilisation > b.utilisation; });
  return out;
}

}  // namespace dtsim
