// Small least-squares tools of the fitters: a linear fit whose columns have bounds and defaults
// (each column is fitted, held at its default or held at its lower bound, whichever fits best),
// a robust variant that refits without the rows it misses by far, and the median |value|.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace dtsim {

/// The median of |v| (NaN when empty).
double median_abs(std::vector<double> v);

struct BoundedColumn {
  double start = 0;  ///< the default: the value held when the column is not fitted
  double lower = 0;
  double upper = std::numeric_limits<double>::infinity();
  bool may_move = true;  ///< false: always held at `start`
};

enum class ColumnState { Free, Start, Lower };

struct BoundedFit {
  std::vector<double> values;
  std::vector<ColumnState> states;
  double cost = std::numeric_limits<double>::infinity();  ///< sum of squared residuals of the rows used
  std::size_t rows_used = 0;
  std::size_t rows_dropped = 0;  ///< left out as outliers (robust fit)
};

/// Least squares x c ~ y where every column is free within [lower, upper], held at its start or
/// held at its lower bound: all 3^m assignments are tried (m is small) and the cheapest wins. When
/// none is feasible, every column keeps its start.
BoundedFit bounded_least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                 const std::vector<BoundedColumn>& columns);

/// bounded_least_squares, then again without the rows it misses by more than
/// max(3 x median |residual|, min_limit), when at least 3 rows remain.
BoundedFit robust_bounded_least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                        const std::vector<BoundedColumn>& columns, double min_limit);

}  // namespace dtsim
