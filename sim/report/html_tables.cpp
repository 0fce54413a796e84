#include "sim/report/html_tables.hpp"
#include "sim/report/json_report.hpp"

#include "sim/report/memory_report.hpp"
#include "sim/report/results.hpp"
#include "sim/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dtsim::html {

std::string days_or_hours(double days)
{
  if (days >= 2)
    return fmt::format("{:.2f} days", days);
  if (days * 24 >= 2)
    return fmt::format("{:.2f} h", days * 24);
  return fmt::format("{:.1f} min", days * 24 * 60);
}

std::string ms(double s)
{
  return fmt::format("{:.3f} ms", s * 1e3);
}

namespace {

using svg::escape;
using svg::num;

// The figures the summary sections read, back from json_report's keys.
RunResult figures_of(const nlohmann::json& j)
{
  RunResult r;
  r.strategy = j.value("strategy", "");
  r.gpus = j.value("gpus", 0);
  r.nodes_used = j.value("nodes_used", 0);
  r.iteration_time_s = j.value("iteration_time_s", 0.0);
  r.compute_time_s = j.value("compute_time_s", 0.0);
  r.exposed_comm_time_s = j.value("exposed_comm_time_s", 0.0);
  r.pipeline_bubble_s = pipeline_bubble_of(j).value_or(0.0);
  r.host_step_s = j.value("host_step_s", 0.0);
  r.input_wait_s = j.value("input_wait_s", 0.0);
  r.nccl_slowdown_s = j.value("nccl_slowdown_s", 0.0);
  r.straggler_wait_s = j.value("straggler_wait_s", 0.0);
  r.throughput_samples_per_s = j.value("throughput_samples_per_s", 0.0);
  r.speedup_vs_1gpu = j.value("speedup_vs_1gpu", 0.0);
  r.scaling_efficiency = j.value("scaling_efficiency", 0.0);
  r.total_time_days = j.value("total_time_days", 0.0);
  r.ideal_linear_total_days = j.value("ideal_linear_total_days", 0.0);
  return r;
}

std::vector<RunResult> figures_of(const std::vector<nlohmann::json>& runs)
{
  std::vector<RunResult> out;
  for (const auto& j : runs)
    out.push_back(figures_of(j));
  return out;
}

/// A result's memory/GPU and fits cells: the busiest GPU's device memory and the verdict, as compare's
/// memory_GiB and sweep's fits.
std::string memory_cells(const nlohmann::json& result)
{
  const DeviceMemoryFigures m = device_memory_of(result);
  if (!m.known)
    return "<td></td><td></td>";
  return fmt::format("<td>{:.1f} GiB</td>{}", m.busiest_bytes / (1024.0 * 1024 * 1024),
                     m.fits ? "<td>yes</td>" : "<td class=\"nofit\">NO FIT</td>");
}

/// A result's pipeline bubble cell (empty without a pipeline); nothing where the table has no such column.
std::string bubble_cell(const nlohmann::json& result, bool column)
{
  if (!column)
    return "";
  const auto b = pipeline_bubble_of(result);
  return fmt::format("<td>{}</td>", b ? ms(*b) : "");
}

std::string value_text(const nlohmann::json& v)
{
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string compare_section(const std::vector<nlohmann::json>& compared)
{
  const std::vector<RunResult> runs = figures_of(compared);
  // The pipeline bubble (the fill and drain every stage waits for) has its column and bar segment where
  // a row is pipelined, as compare's bubble_s.
  const bool bubble = any_pipeline_bubble(compared);
  std::string out = "<h2>Strategies compared</h2>";
  // memory/GPU and fits: the busiest GPU's device memory and the verdict, compare's memory_GiB.
  out += fmt::format("<table><tr><th>strategy</th><th>GPUs</th><th>iteration</th><th>compute</th><th>exposed comm</th>{}"
                     "<th>waiting</th><th>samples/s</th><th>speedup</th><th>efficiency</th><th>total</th><th>memory/GPU</th>"
                     "<th>fits</th></tr>",
                     bubble ? "<th>pipeline bubble</th>" : "");
  double longest = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    longest = std::max(longest, r.iteration_time_s);
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{:.1f}</td><td>{:.2f}x</td>"
                       "<td>{:.1f}%</td><td>{}</td>{}</tr>",
                       escape(r.strategy), r.gpus, ms(r.iteration_time_s), ms(r.compute_time_s), ms(r.exposed_comm_time_s),
                       bubble_cell(compared[i], bubble), ms(r.straggler_wait_s), r.throughput_samples_per_s, r.speedup_vs_1gpu, r.scaling_efficiency * 100,
                       days_or_hours(r.total_time_days), memory_cells(compared[i]));
  }
  out += "</table>";
  const double label_w = 110, bar_w = 640, row_h = 26, top = 28;
  const double height = top + row_h * static_cast<double>(runs.size()) + 30;
  out += fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"strategies\">",
                     num(label_w + bar_w + 140), num(height));
  out += svg::text(label_w, 16,
                   bubble ? "iteration time: compute + exposed communication + pipeline bubble + waiting"
                          : "iteration time: compute + exposed communication + waiting",
                   "class=\"chart-title\"");
  // The pipeline bubble's grey is the one-run report's (html_report.cpp's breakdown).
  const std::vector<std::string> colours = {svg::colour_of("forward"), svg::colour_of("allreduce"), "#d9d9d9", "#bab0ac"};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const double y = top + row_h * static_cast<double>(i);
    out += svg::text(label_w - 6, y + 15, r.strategy, "text-anchor=\"end\"");
    double x = label_w;
    // Waiting: for the slowest GPU, and for input or the host's optimizer step where there is any.
    const double parts[] = {r.compute_time_s, r.exposed_comm_time_s, r.pipeline_bubble_s,
                            r.straggler_wait_s + r.input_wait_s + r.host_step_s};
    const char* names[] = {"compute", "exposed communication", "pipeline bubble", "waiting"};
    for (int k = 0; k < 4; ++k) {
      if (k == 2 && !bubble)
        continue;
      const double w = longest > 0 ? parts[k] / longest * bar_w : 0;
      out += svg::rect(x, y + 3, w, row_h - 8, colours[static_cast<std::size_t>(k)],
                       fmt::format("{} {}: {}", r.strategy, names[k], ms(parts[k])));
      x += w;
    }
    out += svg::text(x + 6, y + 15, ms(r.iteration_time_s));
  }
  double lx = label_w;
  const char* names[] = {"compute", "exposed communication", "pipeline bubble", "waiting for the slowest GPU"};
  for (int k = 0; k < 4; ++k) {
    if (k == 2 && !bubble)
      continue;
    out += svg::rect(lx, height - 20, 11, 11, colours[static_cast<std::size_t>(k)]);
    out += svg::text(lx + 15, height - 10, names[k]);
    lx += 40 + 6.4 * static_cast<double>(std::string(names[k]).size());
  }
  return out + "</svg>";
}

std::string scaling_section(std::vector<nlohmann::json> rows)
{
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.value("gpus", 0) < b.value("gpus", 0); });
  const std::vector<RunResult> points = figures_of(rows);
  svg::Series speedup{"simulated", {}, {}, "#e15759"}, ideal{"ideal linear", {}, {}, "#888", true};
  svg::Series efficiency{"simulated", {}, {}, "#4e79a7"}, full{"ideal (100%)", {}, {}, "#888", true};
  const bool bubble = any_pipeline_bubble(rows);
  std::string table = std::string("<table><tr><th>GPUs</th><th>nodes</th><th>iteration</th><th>exposed comm</th>") +
                      (bubble ? "<th>pipeline bubble</th>" : "") + "<th>samples/s</th>"
                      "<th>speedup</th><th>efficiency</th><th>total</th><th>ideal linear</th><th>memory/GPU</th>"
                      "<th>fits</th></tr>";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const RunResult& r = points[i];
    speedup.x.push_back(r.gpus);
    speedup.y.push_back(r.speedup_vs_1gpu);
    ideal.x.push_back(r.gpus);
    ideal.y.push_back(r.gpus);
    efficiency.x.push_back(r.gpus);
    efficiency.y.push_back(r.scaling_efficiency * 100);
    full.x.push_back(r.gpus);
    full.y.push_back(100);
    table += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{:.1f}</td><td>{:.2f}x</td><td>{:.1f}%</td>"
                         "<td>{}</td><td>{}</td>{}</tr>",
                         r.gpus, r.nodes_used, ms(r.iteration_time_s), ms(r.exposed_comm_time_s), bubble_cell(rows[i], bubble),
                         r.throughput_samples_per_s,
                         r.speedup_vs_1gpu, r.scaling_efficiency * 100, days_or_hours(r.total_time_days),
                         days_or_hours(r.ideal_linear_total_days), memory_cells(rows[i]));
  }
  table += "</table>";
  std::string out = "<h2>Scaling</h2><div class=\"charts\">";
  out += svg::line_chart({"Speedup against one GPU", "GPUs", "speedup", {ideal, speedup}, true});
  out += svg::line_chart({"Scaling efficiency", "GPUs", "efficiency %", {full, efficiency}, true});
  out += "</div>" + table;
  return out;
}

// One chart per varied field: throughput against the field, one line per combination of the others.
std::string sweep_section(const std::vector<std::string>& varied, const std::vector<SweepPoint>& points)
{
  std::string out = "<h2>Sweep</h2><div class=\"charts\">";
  static const std::vector<std::string> palette = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                                   "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
  for (const auto& field : varied) {
    bool numeric = true;
    std::vector<std::string> categories;  // non-numeric values, in order of appearance
    for (const auto& p : points) {
      const auto& v = p.values.contains(field) ? p.values.at(field) : nlohmann::json();
      if (!v.is_number())
        numeric = false;
      const std::string t = value_text(v);
      if (std::find(categories.begin(), categories.end(), t) == categories.end())
        categories.push_back(t);
    }
    std::map<std::string, svg::Series> series;
    std::vector<std::string> order;
    for (const auto& p : points) {
      std::string others;
      for (const auto& f : varied)
        if (f != field && p.values.contains(f))
          others += fmt::format("{}{}={}", others.empty() ? "" : ", ", f, value_text(p.values.at(f)));
      if (others.empty())
        others = "simulated";
      if (!series.count(others)) {
        order.push_back(others);
        series[others] = {others, {}, {}, palette[(order.size() - 1) % palette.size()]};
      }
      const auto& v = p.values.contains(field) ? p.values.at(field) : nlohmann::json();
      const double x = numeric ? v.get<double>()
                               : static_cast<double>(std::find(categories.begin(), categories.end(), value_text(v)) -
                                                     categories.begin());
      series[others].x.push_back(x);
      series[others].y.push_back(p.result.value("throughput_samples_per_s", 0.0));
    }
    svg::LineChart chart{fmt::format("Throughput against {}", field), field, "samples/s", {}};
    chart.log2_x = field == "gpus";
    for (const auto& name : order) {
      auto s = series[name];
      std::vector<std::size_t> idx(s.x.size());
      for (std::size_t i = 0; i < idx.size(); ++i)
        idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return s.x[a] < s.x[b]; });
      svg::Series sorted{s.name, {}, {}, s.colour};
      for (const auto i : idx) {
        sorted.x.push_back(s.x[i]);
        sorted.y.push_back(s.y[i]);
      }
      chart.series.push_back(sorted);
      if (chart.series.size() == 10)
        break;
    }
    out += svg::line_chart(chart);
    if (!numeric) {
      std::string legend;
      for (std::size_t i = 0; i < categories.size(); ++i)
        legend += fmt::format("{}{} = {}", legend.empty() ? "" : ", ", i, escape(categories[i]));
      out += fmt::format("<p class=\"note\">{} values: {}</p>", escape(field), legend);
    }
  }
  out += "</div><table><tr>";
  for (const auto& f : varied)
    if (f != "gpus")  // has its own column
      out += "<th>" + escape(f) + "</th>";
  std::vector<nlohmann::json> results;
  for (const auto& p : points)
    results.push_back(p.result);
  const bool bubble = any_pipeline_bubble(results);
  out += std::string("<th>GPUs</th><th>iteration</th><th>exposed comm</th>") + (bubble ? "<th>pipeline bubble</th>" : "") +
         "<th>samples/s</th><th>efficiency</th><th>total days</th><th>memory/GPU</th><th>fits</th></tr>";
  for (const auto& p : points) {
    out += "<tr>";
    for (const auto& f : varied)
      if (f != "gpus")
        out += "<td>" + escape(p.values.contains(f) ? value_text(p.values.at(f)) : "") + "</td>";
    const auto& r = p.result;
    out += fmt::format("<td>{}</td><td>{}</td><td>{}</td>{}<td>{:.1f}</td><td>{:.1f}%</td><td>{:.3f}</td>{}</tr>",
                       r.value("gpus", 0), ms(r.value("iteration_time_s", 0.0)), ms(r.value("exposed_comm_time_s", 0.0)),
                       bubble_cell(r, bubble), r.value("throughput_samples_per_s", 0.0), r.value("scaling_efficiency", 0.0) * 100,
                       r.value("total_time_days", 0.0), memory_cells(r));
  }
  return out + "</table>";
}

}  // namespace dtsim::html
