// See memory_chart.hpp.
#include "sim/report/memory_chart.hpp"

#include "sim/report/svg.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace dtsim {

using svg::escape;
using svg::num;

std::string memory_section(const Plan& plan, const Topology& topology, double capacity)
{
  const auto& c = plan.memory_curve;
  if (c.size() < 2)
    return "";
  const double width = 1100, height = 300, left = 60, right = 20, top = 30, bottom = 40;
  double peak = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double total = c[i].weights + c[i].grads + c[i].optimizer + c[i].activations + c[i].other;
    if (total > peak) {
      peak = total;
      at = i;
    }
  }
  const double top_gib = std::max(peak, capacity > 0 && capacity < 1.5 * peak ? capacity : 0.0) / kGiB * 1.05;
  const auto x = [&](std::size_t i) { return left + (width - left - right) * static_cast<double>(i) / static_cast<double>(c.size() - 1); };
  const auto y = [&](double bytes) { return top + (height - top - bottom) * (1 - bytes / kGiB / top_gib); };
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"weights", "#4e79a7"}, {"gradients", "#f28e2b"}, {"optimizer state", "#9c755f"}, {"activations", "#59a14f"},
      {"input/output, workspace", "#bab0ac"}};
  const auto value = [&](const MemoryPoint& p, std::size_t k) {
    return k == 0 ? p.weights : k == 1 ? p.grads : k == 2 ? p.optimizer : k == 3 ? p.activations : p.other;
  };
  std::string out = fmt::format("<h2>Memory over one iteration</h2><p class=\"sub\">{}: allocated bytes at each "
                                "forward and backward layer, the loss and the optimizer step; peak {:.2f} GiB in {}.</p>",
                                escape(plan.memory_curve_device >= 0 ? topology.device(plan.memory_curve_device).name : ""),
                                peak / kGiB, escape(c[at].at));
  out += fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"memory over one iteration\">",
                     num(width), num(height));
  std::vector<double> below(c.size(), 0.0);
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::string points;
    for (std::size_t i = 0; i < c.size(); ++i)
      points += fmt::format("{},{} ", num(x(i)), num(y(below[i] + value(c[i], k))));
    for (std::size_t i = c.size(); i-- > 0;)
      points += fmt::format("{},{} ", num(x(i)), num(y(below[i])));
    out += fmt::format("<polygon points=\"{}\" fill=\"{}\"><title>{}</title></polygon>", points, kinds[k].second,
                       escape(kinds[k].first));
    for (std::size_t i = 0; i < c.size(); ++i)
      below[i] += value(c[i], k);
  }
  for (double v : svg::ticks(0, top_gib)) {
    out += svg::line(left, y(v * kGiB), width - right, y(v * kGiB), "#ddd");
    out += svg::text(left - 6, y(v * kGiB) + 4, svg::tick_label(v), "text-anchor=\"end\" class=\"tick\"");
  }
  if (capacity > 0 && capacity / kGiB <= top_gib)
    out += svg::line(left, y(capacity), width - right, y(capacity), "#e15759", "stroke-dasharray=\"6 4\"") +
           svg::text(width - right, y(capacity) - 4, fmt::format("capacity {:.0f} GiB", capacity / kGiB),
                     "text-anchor=\"end\" class=\"tick\"");
  out += svg::line(x(at), top, x(at), height - bottom, "#333", "stroke-dasharray=\"2 3\"");
  out += svg::text(12, top - 12, "GiB", "class=\"tick\"");
  double lx = left;
  for (const auto& [name, colour] : kinds) {
    out += svg::rect(lx, height - 22, 11, 11, colour);
    out += svg::text(lx + 15, height - 12, name, "class=\"legend\"");
    lx += 30 + 6.4 * static_cast<double>(name.size());
  }
  out += "</svg>";
  return out;
}

}  // namespace dtsim
