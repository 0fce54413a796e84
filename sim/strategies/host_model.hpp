// The host as a shared machine (issue 32): one node's CPU cores, shared by everything that runs on
// it. Per training process: its main thread, its pin-memory thread and its DataLoader workers;
// DataParallel's Python threads (one lane: the GIL); NCCL's proxy thread when a collective leaves
// the node. Three effects slow a busy thread down:
//   - the load curve: a sample costs more as the cores fill (shared last-level cache and memory
//     bandwidth, lost turbo headroom), given as the cost with a fraction u of the cores busy over
//     the cost with one busy (measured on the target by calibration/bench/host_costs.py and taken
//     in by `dtsim calibrate`, else the default curve below);
//   - SMT: a second hardware thread on a busy core adds kSmtThreadGain of a core, not a core;
//   - oversubscription: more runnable threads than the hardware runs queue, each getting an equal
//     share (Linux CFS gives runnable threads of equal weight equal CPU time).
// Pure arithmetic, no SimGrid: the loader (loader.hpp) asks it for the slowdown of its workers.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

/// Throughput of a second SMT thread on a busy core: Intel's "up to 30%" for Hyper-Threading
/// (Marr et al., "Hyper-Threading Technology Architecture and Microarchitecture", Intel Technology
/// Journal 6(1), 2002).
constexpr double kSmtThreadGain = 0.3;

/// The load curve: cost of a sample with a fraction of the cores busy over its cost with one busy.
struct LoadCurve {
  std::vector<std::pair<double, double>> points;  ///< (busy fraction 0..1, cost ratio >= some 0.5), in order
  std::string source;
  /// Linear between points, flat beyond the ends; 1 when there are none.
  double at(double busy_fraction) const;
};

/// The default load curve, from the project's own measurement on an H200 host (16 vCPUs, 1 thread
/// per core, calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json and
/// h200-1gpu-2026-11-26/host_costs.json): the cost of a sample rises by 20.5% from one busy core to
/// all of them busy, net of the share of a core each process got.
LoadCurve default_load_curve();

/// One node's CPUs.
struct HostCpus {
  int cores = 0;             ///< physical cores (0: not given: nothing is shared, nothing slows down)
  int threads_per_core = 1;  ///< SMT
  int sockets = 1;
  LoadCurve curve;
  bool curve_calibrated = false;  ///< measured on the target: its clocks are in it already
  /// Vendor turbo figures (GHz, 0: not given): the clock with one core of a socket busy and with all.
  /// Between them the clock falls linearly with the busy cores (Intel publishes turbo bins by active
  /// cores, one 100 MHz bin at a time; AMD's Precision Boost 2 trades clock for power the same way).
  double turbo_max_ghz = 0;
  double turbo_all_core_ghz = 0;
  /// The clock with one busy core over the clock with `busy_cores` busy (1 without turbo figures,
  /// or when the curve was measured on the target).
  double clock_ratio(double busy_cores) const;
};

/// What runs on one node, in busy threads (a thread busy half the time counts 0.5).
struct HostDemand {
  double workers = 0;         ///< DataLoader worker processes of every training process
  double main_threads = 0;    ///< each training process's main (Python) thread, busy throughout
  double pin_threads = 0;     ///< pin-memory threads, busy while copying a batch into pinned memory
  double python_threads = 0;  ///< DataParallel's parallel_apply threads beyond the main one
  double nccl_proxies = 0;    ///< NCCL proxy threads polling the network
  double total() const { return workers + main_threads + pin_threads + python_threads + nccl_proxies; }
};

/// The state of the node's cores under a demand.
struct HostLoad {
  double busy_threads = 0;  ///< runnable threads
  double capacity = 0;      ///< cores' worth of work the hardware does for them (SMT counted)
  double share = 1;         ///< of a core each runnable thread gets (< 1: SMT siblings or a queue)
  double busy_fraction = 0; ///< of the physical cores busy
  double curve_ratio = 1;   ///< the load curve at busy_fraction
  double clock_ratio = 1;   ///< lost turbo headroom (HostCpus::clock_ratio)
  double load_ratio = 1;    ///< curve_ratio x clock_ratio
  bool oversubscribed = false;  ///< more runnable threads than hardware threads
  /// Cost of a thread's work here over its cost alone on an idle host: load_ratio / share.
  double slowdown() const { return load_ratio / share; }
  /// Which resource of the host limits: "cores" (queued or SMT-shared), "shared cache and memory"
  /// (the load curve), "clocks" (turbo lost), or "" when none slows a thread by 5% or more.
  std::string limit() const;
};

HostLoad host_load(const HostCpus& cpus, const HostDemand& demand);

/// What the report says of the host (JSON "host"): the load, the verdict, the workers that would do.
struct HostSummary {
  bool modelled = false;        ///< a host with cores and a loader with a CPU cost
  double busy_threads = 0;      ///< on one domain of cores (the node, or its placement)
  int cores = 0;
  int threads_per_core = 1;
  double share = 1;
  double load_ratio = 1;
  double slowdown = 1;          ///< a worker's sample over its one-core cost
  std::string curve_source;
  bool bound = false;           ///< the loader is slower than the GPU's compute
  std::string limit;            ///< what limits when bound ("" when nothing in particular)
  int workers = 0;              ///< per process
  /// Per process, the fewest workers that keep up with the GPU's compute; -1 when none up to twice
  /// the hardware threads does (the host is the bottleneck); 0 when the loader keeps up already.
  int workers_to_keep_up = 0;
};

}  // namespace dtsim
