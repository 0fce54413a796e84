// Hand-made SVG for the HTML report: escaping, a few shapes, and one line chart with axes. The
// output is plain inline SVG (no script, no external resource), so the page works offline.
#pragma once

#include <string>
#include <vector>

namespace dtsim::svg {

/// Text and attribute values for HTML/SVG: & < > " ' escaped.
std::string escape(const std::string& text);

/// A number as SVG writes it: at most 2 decimals, no trailing zeros.
std::string num(double v);

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "",
                 const std::string& extra = "");
std::string text(double x, double y, const std::string& content, const std::string& extra = "");
std::string line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "");

/// "Nice" axis ticks covering [lo, hi] (about `count` of them: 1, 2, 5 x 10^k steps).
std::vector<double> ticks(double lo, double hi, int count = 5);

/// A short label for a tick value (1.5k, 0.25, 12).
std::string tick_label(double v);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::string colour;
  bool dashed = false;  ///< reference lines (ideal linear)
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  std::vector<Series> series;
  bool log2_x = false;  ///< GPU counts: 1, 2, 4, ... evenly spaced
  double y_min = 0;     ///< the y axis starts here (0 unless told)
  double width = 440, height = 280;
};

/// The chart as one <svg class="chart"> element, with a legend.
std::string line_chart(const LineChart& chart);

/// A colour per name, stable across runs: fixed ones for the usual task categories, a palette
/// by hash for the rest.
std::string colour_of(const std::string& category);

}  // namespace dtsim::svg
