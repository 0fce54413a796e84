#include "sim/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace dtsim::svg {

std::string escape(const std::string& text)
{
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v)
{
  if (!std::isfinite(v))
    return "0";
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& title,
                 const std::string& extra)
{
  const std::string head = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}", num(x), num(y),
                                       num(std::max(w, 0.0)), num(std::max(h, 0.0)), fill, extra.empty() ? "" : " ", extra);
  if (title.empty())
    return head + "/>";
  return head + "><title>" + escape(title) + "</title></rect>";
}

std::string text(double x, double y, const std::string& content, const std::string& extra)
{
  return fmt::format("<text x=\"{}\" y=\"{}\"{}{}>{}</text>", num(x), num(y), extra.empty() ? "" : " ", extra,
                     escape(content));
}

std::string line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra)
{
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"{}{}/>", num(x1), num(y1), num(x2),
                     num(y2), stroke, extra.empty() ? "" : " ", extra);
}

std::vector<double> ticks(double lo, double hi, int count)
{
  if (!(hi > lo))
    hi = lo + 1;
  const double raw = (hi - lo) / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw)
      break;
  }
  std::vector<double> out;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

std::string tick_label(double v)
{
  const double a = std::abs(v);
  if (a >= 1e6)
    return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4)
    return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", std::round(v * 1e4) / 1e4);
}

std::string line_chart(const LineChart& c)
{
  const double left = 58, right = 16, top = 30, bottom = 44;
  const double legend_h = 18.0 * static_cast<double>(c.series.size());
  const double pw = c.width - left - right, ph = c.height - top - bottom;
  double xmin = std::numeric_limits<double>::max(), xmax = std::numeric_limits<double>::lowest();
  double ymax = std::numeric_limits<double>::lowest();
  const auto fx = [&](double x) { return c.log2_x ? std::log2(std::max(x, 1e-12)) : x; };
  for (const auto& s : c.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      xmin = std::min(xmin, fx(s.x[i]));
      xmax = std::max(xmax, fx(s.x[i]));
      ymax = std::max(ymax, s.y[i]);
    }
  if (xmin > xmax) {
    xmin = 0;
    xmax = 1;
  }
  if (xmax == xmin) {
    xmin -= 0.5;
    xmax += 0.5;
  }
  if (!(ymax > c.y_min))
    ymax = c.y_min + 1;
  auto yt = ticks(c.y_min, ymax * 1.05);
  while (yt.size() >= 2 && yt.back() < ymax)  // the top tick covers the highest point
    yt.push_back(yt.back() + (yt[1] - yt[0]));
  const double ytop = yt.back();
  const auto px = [&](double x) { return left + (fx(x) - xmin) / (xmax - xmin) * pw; };
  const auto py = [&](double y) { return top + ph - (y - c.y_min) / (ytop - c.y_min) * ph; };

  std::string out = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
                                num(c.width), num(c.height + legend_h), num(c.width), num(c.height + legend_h),
                                escape(c.title));
  out += text(left, 18, c.title, "class=\"chart-title\"");
  for (const double v : yt) {
    out += line(left, py(v), left + pw, py(v), "#e3e3e3");
    out += text(left - 6, py(v) + 4, tick_label(v), "text-anchor=\"end\" class=\"tick\"");
  }
  // x ticks: the points' own x values (GPU counts, swept values), thinned to fit.
  std::vector<double> xs;
  for (const auto& s : c.series)
    xs.insert(xs.end(), s.x.begin(), s.x.end());
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.size() > 12) {
    std::vector<double> thinned;
    const std::size_t every = (xs.size() + 11) / 12;
    for (std::size_t i = 0; i < xs.size(); i += every)
      thinned.push_back(xs[i]);
    xs = thinned;
  }
  for (const double v : xs) {
    out += line(px(v), top + ph, px(v), top + ph + 4, "#555");
    out += text(px(v), top + ph + 17, tick_label(v), "text-anchor=\"middle\" class=\"tick\"");
  }
  out += line(left, top + ph, left + pw, top + ph, "#555");
  out += line(left, top, left, top + ph, "#555");
  out += text(left + pw / 2, top + ph + 36, c.x_label, "text-anchor=\"middle\" class=\"axis-label\"");
  out += text(14, top + ph / 2, c.y_label,
              fmt::format("text-anchor=\"middle\" class=\"axis-label\" transform=\"rotate(-90 14 {})\"", num(top + ph / 2)));
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    std::string points;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      points += fmt::format("{}{},{}", points.empty() ? "" : " ", num(px(s.x[i])), num(py(s.y[i])));
    out += fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>",
                       s.colour, s.dashed ? " stroke-dasharray=\"5 4\"" : "", points);
    if (!s.dashed)
      for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
        out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"><title>{}</title></circle>", num(px(s.x[i])),
                           num(py(s.y[i])), s.colour,
                           escape(fmt::format("{}: {} = {:g}, {} = {:.4g}", s.name, c.x_label, s.x[i], c.y_label, s.y[i])));
    const double ly = c.height + 18.0 * static_cast<double>(k) + 4;
    out += line(left, ly, left + 22, ly, s.colour, fmt::format("stroke-width=\"2\"{}", s.dashed ? " stroke-dasharray=\"5 4\"" : ""));
    out += text(left + 28, ly + 4, s.name, "class=\"legend\"");
  }
  out += "</svg>";
  return out;
}

std::string colour_of(const std::string& category)
{
  // Tableau 10, a palette made for categorical charts.
  static const std::map<std::string, std::string> fixed = {
      {"forward", "#4e79a7"},   {"backward", "#59a14f"},  {"optimizer", "#9c755f"}, {"all_reduce", "#e15759"},
      {"allreduce", "#e15759"}, {"broadcast", "#f28e2b"}, {"input", "#76b7b2"},    {"loader", "#76b7b2"},
      {"h2d", "#76b7b2"},       {"idle", "#eeeeee"},      {"launch", "#bab0ac"},   {"activation", "#edc948"},
      {"gradient", "#b07aa1"},  {"loss", "#ff9da7"},
      // sharded data parallelism: gathers in purples, the gradient ReduceScatter in the AllReduce's red family
      {"allgather", "#7b4f9e"}, {"allgather-backward", "#c5a3dc"}, {"reduce-scatter", "#d37295"}, {"fsdp-copy", "#86bcb6"}, {"fsdp-copy-in", "#86bcb6"},
      {"fsdp-copy-backward", "#b9ddd9"}, {"fsdp-grad-copy", "#e8a6bf"}, {"fsdp-grad-pass", "#e8a6bf"},
      {"bucket-copy", "#86bcb6"}};
  if (const auto it = fixed.find(category); it != fixed.end())
    return it->second;
  static const std::array<const char*, 8> palette = {"#af7aa1", "#edc948", "#ff9da7", "#86bcb6",
                                                     "#d37295", "#a0cbe8", "#f1ce63", "#8cd17d"};
  std::size_t h = 0;  // the same colour on every platform (std::hash may differ)
  for (const unsigned char ch : category)
    h = h * 31 + ch;
  return palette[h % palette.size()];
}

}  // namespace dtsim::svg
