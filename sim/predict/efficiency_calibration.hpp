// The compute efficiency at which a prediction meets a measured throughput: what `dtsim validate`
// does for a row whose compute cell is `efficiency=calibrate` (training_runs.hpp), and what
// tests/data/training/find_efficiencies.py did by hand before it.
//
// dtsim's rate rises with the efficiency (compute is faster, communication and the input pipeline
// stay as they were), so the efficiency is the root of log(rate(e) / measured) on [lo, hi]. It is
// found by TOMS 748 (Alefeld, Potra and Shi 1995; Boost.Math's toms748_solve) over log(e): where
// compute dominates, log rate is nearly linear in log e and a handful of simulations suffice.
#pragma once

#include <functional>

namespace dtsim {

/// Bounds of a calibrated efficiency, those of training.compute.efficiency (training_settings.cpp).
constexpr double kLowestEfficiency = 1e-3;
constexpr double kHighestEfficiency = 1.0;

struct EfficiencyFit {
  enum class Outcome { Found, BelowLowest, AboveHighest };
  Outcome outcome = Outcome::Found;
  double efficiency = 0;  ///< Found: the simulated efficiency whose rate came nearest the measurement (the root, to
                          ///< the tolerance); else the bound that came closest
  double rate = 0;        ///< dtsim's rate there (Found: the measured one, to the tolerance)
  int simulations = 0;    ///< predictions made
};

/// How far a rate is from the measured one as the solver weighs it, |log(rate / measured)|: the
/// simulated efficiency nearest by it is the one a Found fit reports.
double calibration_distance(double rate, double measured_rate);

/// The efficiency e in [kLowestEfficiency, kHighestEfficiency] at which rate_at(e) equals
/// `measured_rate`, to `relative_tolerance` of e: always one rate_at was called with, so a caller
/// that keeps what it computed there need not compute it again. BelowLowest: even the lowest
/// efficiency is faster than measured; AboveHighest: the highest is slower (communication or the
/// input pipeline bound the run's rate in dtsim, or the measurement is beyond the GPU's peak).
EfficiencyFit calibrate_efficiency(const std::function<double(double)>& rate_at, double measured_rate,
                                   double relative_tolerance = 1e-5);

}  // namespace dtsim
