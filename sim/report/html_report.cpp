#include "sim/report/html_report.hpp"

#include "sim/report/html_tables.hpp"
#include "sim/report/memory_chart.hpp"

#include "sim/report/svg.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dtsim {

namespace {

using html::days_or_hours;
using html::ms;
using svg::escape;
using svg::num;

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:24px auto;max-width:1180px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;margin:0 0 12px}.note{color:#666;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 10px}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6;font-weight:600}td:first-child,th:first-child{text-align:left}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:150px}
.card b{display:block;font-size:20px}.charts{display:flex;flex-wrap:wrap;gap:18px}
svg text{font-size:11px;fill:#333}.chart-title{font-size:13px;font-weight:600}.tick{fill:#666}.axis-label{fill:#444}
.swatch{display:inline-block;width:11px;height:11px;margin:0 4px 0 12px;vertical-align:-1px;border-radius:2px}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px}
.nofit{color:#c0392b;font-weight:600}
)";

// Sets data-charts (svg.chart elements), data-charts-drawn (those with a non-empty box and shapes)
// and data-script-errors on <body>: the browser test reads them from the dumped DOM.
constexpr const char* kCheckScript = R"(<script>
(function(){var errors=0;window.addEventListener('error',function(){errors++;document.body.setAttribute('data-script-errors',String(errors));});
window.addEventListener('DOMContentLoaded',function(){var charts=document.querySelectorAll('svg.chart'),drawn=0;
charts.forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0&&s.querySelector('rect,polyline,circle'))drawn++;});
document.body.setAttribute('data-charts',String(charts.length));document.body.setAttribute('data-charts-drawn',String(drawn));
document.body.setAttribute('data-script-errors',String(errors));});})();
</script>)";

std::string card(const std::string& value, const std::string& what)
{
  return fmt::format("<div class=\"card\"><b>{}</b>{}</div>", escape(value), escape(what));
}

// One horizontal bar split into parts; the parts' legend below.
std::string stacked_bar(const std::string& title, const std::vector<std::pair<std::string, double>>& parts,
                        const std::vector<std::string>& colours, const std::string& unit_label, double width = 1100)
{
  double total = 0;
  for (const auto& p : parts)
    total += std::max(p.second, 0.0);
  const double left = 10, bar_w = width - 20, h = 92;
  std::string out = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                                "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">",
                                num(width), num(h), escape(title));
  out += svg::text(left, 16, title, "class=\"chart-title\"");
  double x = left;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const double w = total > 0 ? std::max(parts[i].second, 0.0) / total * bar_w : 0;
    out += svg::rect(x, 26, w, 26, colours[i],
                     fmt::format("{}: {} ({:.1f}%)", parts[i].first, ms(parts[i].second), total > 0 ? parts[i].second / total * 100 : 0));
    if (w > 60)
      out += svg::text(x + 4, 43, fmt::format("{:.0f}%", parts[i].second / total * 100), "fill=\"#fff\"");
    x += w;
  }
  double lx = left;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += svg::rect(lx, 64, 11, 11, colours[i]);
    const std::string label = fmt::format("{} {}", parts[i].first, ms(parts[i].second));
    out += svg::text(lx + 15, 74, label, "class=\"legend\"");
    lx += 24 + 6.4 * static_cast<double>(label.size());
  }
  out += svg::text(width - 10, 16, unit_label, "text-anchor=\"end\" class=\"tick\"");
  out += "</svg>";
  return out;
}

std::string breakdown_section(const RunResult& r)
{
  std::vector<std::pair<std::string, double>> parts = {{"compute", r.compute_time_s},
                                                       {"exposed communication", r.exposed_comm_time_s}};
  std::vector<std::string> colours = {svg::colour_of("forward"), svg::colour_of("allreduce")};
  if (r.pipeline_stages > 1) {
    parts.emplace_back("pipeline bubble", r.pipeline_bubble_s);
    colours.emplace_back("#d9d9d9");
  }
  parts.insert(parts.end(), {{"waiting for the slowest GPU", r.straggler_wait_s},
                             {"waiting for input", r.input_wait_s},
                             {"optimizer step on the host", r.host_step_s}});
  colours.insert(colours.end(), {"#bab0ac", svg::colour_of("input"), svg::colour_of("optimizer")});
  std::string out = "<h2>One iteration</h2>";
  out += stacked_bar(fmt::format("iteration {} = compute + exposed communication + {}waiting + input{}", ms(r.iteration_time_s),
                                 r.pipeline_stages > 1 ? "pipeline bubble + " : "",
                                 r.host_step_s > 0 ? " + host optimizer step" : ""),
                     parts, colours, "steady state, busiest GPU");
  out += fmt::format("<p class=\"note\">The first GPU's communication is in flight {} of the iteration; {} of it is hidden behind "
                     "compute{}. Mean of {} simulated iterations after {} warm-up (spread {:.2f}%).</p>",
                     ms(r.comm_time_s), ms(std::max(0.0, r.comm_time_s - r.exposed_comm_time_s)),
                     r.nccl_slowdown_s > 0 ? fmt::format(", and that compute is {} longer for running beside the NCCL kernels",
                                                         ms(r.nccl_slowdown_s))
                                           : std::string(),
                     r.simulated_iterations - r.warmup_iterations, r.warmup_iterations, r.iteration_spread * 100);
  return out;
}

std::string arithmetic_section(const RunResult& r)
{
  std::string out = "<h2>Training time</h2><div class=\"cards\">";
  out += card(days_or_hours(r.single_gpu_total_days), "one GPU (by hand)");
  out += card(days_or_hours(r.ideal_linear_total_days), fmt::format("ideal linear, {} GPUs", r.gpus));
  out += card(days_or_hours(r.total_time_days), fmt::format("simulated, {} GPUs", r.gpus));
  out += card(fmt::format("{:.2f}x", r.speedup_vs_1gpu), fmt::format("speedup ({:.1f}% efficiency)", r.scaling_efficiency * 100));
  out += card(fmt::format("{:.1f}/s", r.throughput_samples_per_s), "samples per second");
  out += "</div><table><tr><th>estimate</th><th>time</th><th>arithmetic</th></tr>";
  out += fmt::format("<tr><td>single GPU</td><td>{}</td><td>{:.0f} batches of {:g} &times; {:.4g} s &times; {:g} epochs</td></tr>",
                     days_or_hours(r.single_gpu_total_days), r.single_gpu_iterations_per_epoch, r.batch_per_gpu,
                     r.single_gpu_iteration_s, r.epochs);
  out += fmt::format("<tr><td>ideal linear</td><td>{}</td><td>single GPU / {}</td></tr>",
                     days_or_hours(r.ideal_linear_total_days), r.gpus);
  out += fmt::format("<tr><td>simulated</td><td>{}</td><td>{:.0f} iterations &times; {:.6f} s &times; {:g} epochs + set-up {}</td></tr>",
                     days_or_hours(r.total_time_days), r.iterations_per_epoch, r.iteration_time_s, r.epochs,
                     ms(r.setup_time_s));
  out += "</table>";
  out += fmt::format("<p class=\"note\">{:.0f} samples &times; {:g} epochs; compute: {}.</p>", r.dataset_samples, r.epochs,
                     escape(r.compute_source));
  return out;
}

std::string timeline_section(const Timeline& tl)
{
  const double label_w = 250, plot_w = 880, row_h = 15, top = 34;
  std::set<std::string> categories;
  for (const auto& row : tl.rows)
    for (const auto& b : row.blocks)
      categories.insert(to_string(b.category));
  const double legend_h = 22;
  const double height = top + row_h * static_cast<double>(tl.rows.size()) + 30 + legend_h;
  const double width = label_w + plot_w + 20;
  std::string out = "<h2>Timeline of one iteration</h2>";
  out += fmt::format("<p class=\"sub\">Iteration {} ({}), {} of {} GPUs shown (<code>--gpus-shown</code>){}, {} of {} busy "
                     "link directions carrying their transfers.{} Hover a block for its tasks.</p>",
                     tl.iteration, ms(tl.length_s), tl.gpus_shown, tl.gpus_total,
                     tl.folded_from_gpus > 0 ? fmt::format(" standing for all {} (ranks folded)", tl.folded_from_gpus) : "",
                     tl.links_shown, tl.links_busy,
                     tl.folded_from_gpus > 0 ? " The folded ranks' collectives, timed on their own, are drawn on their GPU's "
                                          "row and on no link."
                                        : "");
  out += fmt::format("<svg class=\"chart timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"timeline\">",
                     num(width), num(height));
  const double scale = tl.length_s > 0 ? plot_w / tl.length_s : 0;
  const double bottom = top + row_h * static_cast<double>(tl.rows.size());
  for (const double t : svg::ticks(0, tl.length_s * 1e3, 10)) {
    if (t > tl.length_s * 1e3 + 1e-9)
      continue;
    const double x = label_w + t / 1e3 * scale;
    out += svg::line(x, top - 4, x, bottom, "#e6e6e6");
    out += svg::text(x, top - 8, svg::tick_label(t), "text-anchor=\"middle\" class=\"tick\"");
  }
  out += svg::text(label_w, 12, "ms from the start of the iteration", "class=\"axis-label\"");
  for (std::size_t i = 0; i < tl.rows.size(); ++i) {
    const auto& row = tl.rows[i];
    const double y = top + row_h * static_cast<double>(i);
    if (row.gpu_compute)
      out += svg::rect(label_w, y + 1, plot_w, row_h - 2, svg::colour_of("idle"), "idle");
    else if (i % 2 == 0)
      out += svg::rect(label_w, y + 1, plot_w, row_h - 2, "#fafafa");
    out += svg::text(label_w - 6, y + row_h - 4, row.label, "text-anchor=\"end\"");
    for (const auto& b : row.blocks)
      out += svg::rect(label_w + b.start * scale, y + 1, std::max((b.end - b.start) * scale, 0.6), row_h - 2,
                       svg::colour_of(to_string(b.category)), to_string(b.category) + std::string(": ") + b.label);
  }
  double lx = label_w;
  const double ly = bottom + 16;
  for (const auto& c : std::vector<std::string>{"idle"}) {
    out += svg::rect(lx, ly, 11, 11, svg::colour_of(c), "", "stroke=\"#bbb\"");
    out += svg::text(lx + 15, ly + 10, "idle (GPU not computing)");
    lx += 170;
  }
  for (const auto& c : categories) {
    out += svg::rect(lx, ly, 11, 11, svg::colour_of(c));
    out += svg::text(lx + 15, ly + 10, c);
    lx += 26 + 6.4 * static_cast<double>(c.size());
  }
  out += "</svg>";
  return out;
}

/// `folded`: the plan's ranks were folded: their collectives were timed on their own and put no bytes
/// on these links.
std::string links_section(const std::vector<LinkUse>& links, bool folded)
{
  std::string out = "<h2>Link utilisation</h2>";
  if (folded)
    out += "<p class=\"note\">The folded ranks' collectives, timed on their own, are not counted here "
           "(<code>simulation.ranks</code> \"all\" simulates them on the links).</p>";
  if (links.empty())
    return out + "<p>No transfer crossed a link in the measured iterations.</p>";
  const std::size_t shown = std::min<std::size_t>(links.size(), 20);
  const double label_w = 300, bar_w = 420, row_h = 18, top = 26;
  const double height = top + row_h * static_cast<double>(shown) + 8;
  out += fmt::format("<p class=\"sub\">Per direction, over the measured iterations: bytes over (bandwidth &times; "
                     "iteration time); the lighter bar is the share of the iteration with a transfer in flight. "
                     "{} of {} link directions shown, busiest first.</p>",
                     shown, links.size());
  out += fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"link utilisation\">",
                     num(label_w + bar_w + 200), num(height));
  out += svg::text(label_w, 16, "utilisation", "class=\"chart-title\"");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& l = links[i];
    const double y = top + row_h * static_cast<double>(i);
    out += svg::text(label_w - 6, y + 12, l.name, "text-anchor=\"end\"");
    out += svg::rect(label_w, y + 2, bar_w, row_h - 5, "#f2f2f2");
    out += svg::rect(label_w, y + 2, bar_w * std::min(l.busy_fraction, 1.0), row_h - 5, "#f6c4c5",
                     fmt::format("busy {:.1f}% of the iteration", l.busy_fraction * 100));
    out += svg::rect(label_w, y + 2, bar_w * std::min(l.utilisation, 1.0), row_h - 5, svg::colour_of("allreduce"),
                     fmt::format("{}: {:.1f} MB per iteration at {:.1f} GB/s: {:.1f}% utilised", l.name,
                                 l.bytes_per_iteration / 1e6, l.bandwidth / 1e9, l.utilisation * 100));
    out += svg::text(label_w + bar_w + 6, y + 12,
                     fmt::format("{:.1f}% ({:.1f}% busy), {:.0f} GB/s", l.utilisation * 100, l.busy_fraction * 100, l.bandwidth / 1e9));
  }
  out += "</svg>";
  return out;
}

std::string per_gpu_section(const RunResult& r)
{
  if (r.per_gpu.empty())
    return "";
  std::string out = "<h2>Per GPU</h2><table><tr><th>GPU</th><th>sent MB</th><th>received MB</th><th>computing</th><th>idle</th></tr>";
  const std::size_t shown = std::min<std::size_t>(r.per_gpu.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& u = r.per_gpu[i];
    const std::string name = u.stands_for > 1 ? fmt::format("{} (for {})", u.device, u.stands_for) : u.device;
    out += fmt::format("<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{}</td></tr>", escape(name),
                       u.bytes_sent / 1e6, u.bytes_received / 1e6, ms(u.busy_s), ms(u.idle_s));
  }
  out += "</table>";
  if (shown < r.per_gpu.size())
    out += fmt::format("<p class=\"note\">{} more GPUs not listed.</p>", r.per_gpu.size() - shown);
  return out;
}

}  // namespace

std::string html_report(const HtmlReportInput& in)
{
  const RunResult* r = in.run.result;
  std::string body;
  body += "<h1>" + escape(in.title) + "</h1>";
  if (r) {
    body += fmt::format("<p class=\"sub\">{} on {}: {} GPU(s) on {} node(s) of {} {}; {} parameters, strategy <b>{}</b>. "
                        "Simulated by dtsim: a prediction, not a measurement.</p>",
                        escape(r->model), escape(r->topology), r->gpus, r->nodes_used, r->gpus_per_node, escape(r->gpu),
                        r->params, escape(r->strategy));
    body += arithmetic_section(*r);
    body += breakdown_section(*r);
  } else {
    body += "<p class=\"sub\">Simulated by dtsim: predictions, not measurements.</p>";
  }
  if (!in.compared.empty())
    body += html::compare_section(in.compared);
  if (!in.scaling.empty())
    body += html::scaling_section(in.scaling);
  if (!in.sweep.empty())
    body += html::sweep_section(in.varied, in.sweep);
  if (r && in.run.plan && in.run.spans && in.run.topology) {
    const Timeline tl = build_timeline(*in.run.topology, *in.run.plan, *in.run.spans, in.timeline);
    body += timeline_section(tl);
    body += links_section(link_utilisation(*in.run.topology, *in.run.plan, *in.run.spans, r->iteration_time_s),
                          tl.folded_from_gpus > 0);
    body += per_gpu_section(*r);
    body += memory_section(*in.run.plan, *in.run.topology, r->gpu_memory_bytes);
  }
  if (r && !r->notes.empty()) {
    body += "<h2>Modelled as</h2><ul>";
    for (const auto& n : r->notes)
      body += "<li>" + escape(n) + "</li>";
    body += "</ul>";
  }
  if (!in.command.empty()) {
    std::string cmd;
    for (const auto& a : in.command)
      cmd += (cmd.empty() ? "" : " ") + a;
    body += "<p class=\"note\">Made by <code>" + escape(cmd) + "</code></p>";
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" + escape(in.title) + "</title><style>" + kStyle + "</style>" + kCheckScript + "</head>\n<body>\n" +
         body + "\n</body></html>\n";
}

}  // namespace dtsim
