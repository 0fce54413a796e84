#include "calibration/least_squares.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace dtsim {

double median_abs(std::vector<double> v)
{
  if (v.empty())
    return std::numeric_limits<double>::quiet_NaN();
  for (auto& x : v)
    x = std::fabs(x);
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {

/// Least squares on rows x -> y with only the columns in `active` free (the others 0), by Eigen's
/// column-pivoting Householder QR (no normal equations: the columns mix microseconds and
/// efficiencies, whose squares differ by many orders). False when the active columns are
/// linearly dependent on these rows.
bool solve(const std::vector<std::vector<double>>& x, const std::vector<double>& y, const std::vector<bool>& active,
           std::vector<double>& out)
{
  const std::size_t m = active.size();
  std::vector<std::size_t> cols;
  for (std::size_t c = 0; c < m; ++c)
    if (active[c])
      cols.push_back(c);
  out.assign(m, 0.0);
  if (cols.empty())
    return true;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(x.size()), static_cast<Eigen::Index>(cols.size()));
  Eigen::VectorXd b(static_cast<Eigen::Index>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t k = 0; k < cols.size(); ++k)
      a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = x[i][cols[k]];
    b(static_cast<Eigen::Index>(i)) = y[i];
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() < static_cast<Eigen::Index>(cols.size()))
    return false;
  const Eigen::VectorXd c = qr.solve(b);
  for (std::size_t k = 0; k < cols.size(); ++k)
    out[cols[k]] = c(static_cast<Eigen::Index>(k));
  return true;
}

double residual(const std::vector<double>& row, double y, const std::vector<double>& c)
{
  double r = -y;
  for (std::size_t k = 0; k < c.size(); ++k)
    r += row[k] * c[k];
  return r;
}

}  // namespace

BoundedFit bounded_least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                 const std::vector<BoundedColumn>& columns)
{
  const std::size_t m = columns.size();
  BoundedFit best;
  best.rows_used = x.size();
  best.states.assign(m, ColumnState::Start);
  for (const auto& col : columns)
    best.values.push_back(col.start);
  std::size_t assignments = 1;
  for (std::size_t k = 0; k < m; ++k)
    assignments *= 3;
  for (std::size_t code = 0; code < assignments; ++code) {
    std::vector<ColumnState> state(m);
    bool allowed = true;
    for (std::size_t k = 0, c = code; k < m; ++k, c /= 3) {
      state[k] = static_cast<ColumnState>(c % 3);
      allowed = allowed && (columns[k].may_move || state[k] == ColumnState::Start);
    }
    if (!allowed)
      continue;
    std::vector<bool> active(m);
    std::vector<double> held(m), yy = y;
    for (std::size_t k = 0; k < m; ++k) {
      active[k] = state[k] == ColumnState::Free;
      held[k] = state[k] == ColumnState::Lower ? columns[k].lower : columns[k].start;
      if (!active[k])
        for (std::size_t i = 0; i < x.size(); ++i)
          yy[i] -= x[i][k] * held[k];
    }
    std::vector<double> c;
    if (!solve(x, yy, active, c))
      continue;
    bool ok = true;
    for (std::size_t k = 0; k < m; ++k) {
      if (!active[k])
        c[k] = held[k];
      else
        ok = ok && c[k] >= columns[k].lower && c[k] <= columns[k].upper;
    }
    if (!ok)
      continue;
    double cost = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = residual(x[i], y[i], c);
      cost += r * r;
    }
    if (cost < best.cost - 1e-12) {
      best.cost = cost;
      best.values = c;
      best.states = state;
    }
  }
  return best;
}

BoundedFit robust_bounded_least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                        const std::vector<BoundedColumn>& columns, double min_limit)
{
  const BoundedFit first = bounded_least_squares(x, y, columns);
  std::vector<double> residuals;
  for (std::size_t i = 0; i < x.size(); ++i)
    residuals.push_back(residual(x[i], y[i], first.values));
  const double limit = std::max(3 * median_abs(residuals), min_limit);
  std::vector<std::vector<double>> kept_x;
  std::vector<double> kept_y;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::fabs(residuals[i]) <= limit) {
      kept_x.push_back(x[i]);
      kept_y.push_back(y[i]);
    }
  if (kept_x.size() == x.size() || kept_x.size() < 3)
    return first;
  BoundedFit second = bounded_least_squares(kept_x, kept_y, columns);
  second.rows_dropped = x.size() - kept_x.size();
  return second;
}

}  // namespace dtsim
