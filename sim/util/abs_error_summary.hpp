// The two figures every `dtsim validate` table of relative errors ends with: the median and the
// largest |error| (the issues' targets are stated in them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dtsim {

struct AbsErrorSummary {
  std::size_t count = 0;
  double median = 0, worst = 0;  ///< 0 for an empty list
};

/// Median (the mean of the middle two for an even count) and largest of |e| over `errors`.
inline AbsErrorSummary summarize_abs_errors(std::vector<double> errors)
{
  for (double& e : errors)
    e = std::abs(e);
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  if (n == 0)
    return {};
  return {n, n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2, errors.back()};
}

}  // namespace dtsim
