#include "sim/strategies/host_model.hpp"

#include <algorithm>

namespace dtsim {

double LoadCurve::at(double u) const
{
  if (points.empty())
    return 1.0;
  if (u <= points.front().first)
    return points.front().second;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto& [u0, r0] = points[i - 1];
    const auto& [u1, r1] = points[i];
    if (u <= u1)
      return u1 > u0 ? r0 + (r1 - r0) * (u - u0) / (u1 - u0) : r1;
  }
  return points.back().second;
}

LoadCurve default_load_curve()
{
  // calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json ("with_training"): k processes
  // decoding and augmenting JPEGs beside a training process on 16 vCPUs. One process: 300.1
  // samples/s; sixteen: 3,750.1 samples/s in all, 234.4 each, i.e. a sample costs 1.280 x as much.
  // The 17 runnable threads (16 + the trainer's) on 16 vCPUs gave each 16/17 of a CPU (CPU
  // utilisation measured 0.94), which the model counts apart (HostLoad::share): 1.280 x 16/17 =
  // 1.205 is the cost of filling the cores. The DataLoader measurement of
  // calibration/measured/h200-1gpu-2026-11-26 agrees: 4.57 ms of a worker per sample with 1 worker,
  // 5.99 with 16 (+31%, the main and pin-memory threads' share included).
  LoadCurve c;
  c.points = {{0.0, 1.0}, {1.0, 1.280 * 16.0 / 17.0}};
  c.source = "default: the project's H200-host measurement (calibration/measured/h200-1gpu-2026-11-27), +20.5% with "
             "every core busy";
  return c;
}

double HostCpus::clock_ratio(double busy_cores) const
{
  if (curve_calibrated || !(turbo_max_ghz > 0) || !(turbo_all_core_ghz > 0) || cores <= 0)
    return 1.0;
  const double per_socket = static_cast<double>(cores) / std::max(1, sockets);
  const double busy = std::clamp(busy_cores / std::max(1, sockets), 1.0, per_socket);  // spread over sockets
  const double ghz = per_socket > 1 ? turbo_max_ghz - (turbo_max_ghz - turbo_all_core_ghz) * (busy - 1) / (per_socket - 1)
                                    : turbo_all_core_ghz;
  return turbo_max_ghz / ghz;
}

HostLoad host_load(const HostCpus& cpus, const HostDemand& demand)
{
  HostLoad l;
  l.busy_threads = demand.total();
  if (cpus.cores <= 0 || !(l.busy_threads > 0))
    return l;
  const double cores = cpus.cores;
  const double on_cores = std::min(l.busy_threads, cores);
  // Threads beyond one per core run as SMT siblings (the scheduler spreads over idle cores first),
  // each sibling adding kSmtThreadGain of a core; beyond every hardware thread they queue.
  const double siblings = std::clamp(l.busy_threads - cores, 0.0, cores * (cpus.threads_per_core - 1));
  l.capacity = on_cores + kSmtThreadGain * siblings;
  l.share = std::min(1.0, l.capacity / l.busy_threads);
  l.oversubscribed = l.busy_threads > cores * cpus.threads_per_core;
  l.busy_fraction = on_cores / cores;
  l.curve_ratio = cpus.curve.at(l.busy_fraction);
  l.clock_ratio = cpus.clock_ratio(on_cores);
  l.load_ratio = l.curve_ratio * l.clock_ratio;
  return l;
}

std::string HostLoad::limit() const
{
  const double queue = 1.0 / share;
  if (queue < 1.05 && load_ratio < 1.05)
    return "";
  if (queue >= load_ratio)
    return oversubscribed ? "cores (more runnable threads than hardware threads: they queue)"
                          : "cores (threads share cores as SMT siblings)";
  return clock_ratio > curve_ratio ? "clocks (turbo headroom lost with the cores busy)"
                                   : "shared cache and memory bandwidth (the load curve with the cores busy)";
}

}  // namespace dtsim
