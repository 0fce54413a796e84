// See efficiency_calibration.hpp.
#include "sim/predict/efficiency_calibration.hpp"

#include <boost/math/tools/toms748_solve.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dtsim {

double calibration_distance(double rate, double measured_rate)
{
  return std::fabs(std::log(rate / measured_rate));
}

EfficiencyFit calibrate_efficiency(const std::function<double(double)>& rate_at, double measured_rate,
                                   double relative_tolerance)
{
  EfficiencyFit fit;
  // The evaluated point whose rate came closest to the measurement: what a Found fit reports, so
  // that its efficiency is one the caller has simulated.
  double best_x = 0, best_g = std::numeric_limits<double>::infinity();
  // g(x) = log(rate(e^x) / measured): negative while dtsim is slower than the measurement.
  const auto g = [&](double x) {
    ++fit.simulations;
    const double rate = rate_at(std::exp(x));
    const double gx = std::log(rate / measured_rate);
    if (calibration_distance(rate, measured_rate) < std::fabs(best_g)) {
      best_x = x;
      best_g = gx;
    }
    return gx;
  };
  double lo = std::log(kLowestEfficiency), hi = std::log(kHighestEfficiency);
  double g_hi = g(hi);
  if (g_hi < 0) {
    fit.outcome = EfficiencyFit::Outcome::AboveHighest;
    fit.efficiency = kHighestEfficiency;
    fit.rate = measured_rate * std::exp(g_hi);
    return fit;
  }
  // Where compute alone set the rate, it would be proportional to e: the first guess. Communication
  // and the input pipeline do not speed up with e, so the guess falls at or below the root.
  const double guess = std::clamp(hi - g_hi, lo, hi);
  double g_lo = 0;
  if (guess < hi) {
    const double g_guess = g(guess);
    if (g_guess <= 0) {
      lo = guess;
      g_lo = g_guess;
    } else {
      hi = guess;
      g_hi = g_guess;
      g_lo = g(lo);
    }
  } else {
    g_lo = g(lo);
  }
  if (g_lo > 0) {
    fit.outcome = EfficiencyFit::Outcome::BelowLowest;
    fit.efficiency = kLowestEfficiency;
    fit.rate = measured_rate * std::exp(g_lo);
    return fit;
  }
  if (g_lo < 0 && g_hi > 0) {
    std::uintmax_t max_iter = 40;  // TOMS 748 needs a few; a bound in case the rate is not smooth
    const auto close_enough = [&](double a, double b) { return std::fabs(b - a) <= relative_tolerance; };
    // The bracket it ends on has both ends evaluated, the root between them: the end nearer the
    // measurement (or a point evaluated earlier that came nearer still) is within the tolerance.
    (void)boost::math::tools::toms748_solve(g, lo, hi, g_lo, g_hi, close_enough, max_iter);
  }
  fit.efficiency = std::exp(best_x);
  fit.rate = measured_rate * std::exp(best_g);
  return fit;
}

}  // namespace dtsim
