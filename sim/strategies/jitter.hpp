// Step-time jitter of synchronous ranks (stragglers). A GPU's iteration does not take the same
// time every step, nor on every GPU: clocks move with power and temperature, the host interrupts
// the process feeding it, kernels land in a different order. Alone, a GPU runs at its mean speed
// (that is what a measured single-GPU throughput is); in synchronous training every gradient
// AllReduce waits for the slowest rank, so the iteration runs at the pace of the maximum over
// the ranks: for a per-iteration coefficient of variation cv that is about
// 1 + cv * E[max of N standard normals] (0.56 for 2 ranks, 1.03 for 4, 1.42 for 8, 1.77 for 16).
//
// Deterministic, low-noise sampling: in every iteration the N ranks get the N expected normal
// order statistics (Blom's positions z_i = Phi^-1((i + 1 - 3/8) / (N + 1/4)), i = 0..N-1, whose
// mean is 0 and whose maximum is E[max] to within 1%), rotated by one rank per iteration, so the
// straggler moves from rank to rank and the expected wait emerges from the simulation itself.
// Every compute task of a rank in an iteration is stretched by 1 + cv * z. One rank: z = 0,
// exactly the measured time.
//
// Where the ranks are not all alike (pipeline stages of unequal work, each paced by the slowest of
// its GPUs), which rank gets which statistic matters: dealt in rank order, one stage would hold all
// the slowest GPUs (the heaviest last stage of a 64-stage GPT 1T run: 8 x 4.5% slower) and another
// all the fastest. A builder can deal them like cards instead (`deal_over_groups`): group g's k-th
// rank gets statistic k G + g, so every group holds one from each of its k strata, as a random
// placement gives on average. For that 1T run (last stage 8% heavier, 8 GPUs per stage, cv 1.5%)
// the expected pace of the slowest stage under random placement is 1.1031 x a light stage's mean;
// dealt in rank order dtsim said 1.1291, dealt over the stages 1.0988.
//
// training.compute.jitter_cv sets cv (0 turns it off). The default, 1.5%, is a stated choice, not
// a fit: the middle of the 1-2% per-iteration variation of GPU step times named in the validation
// issue; it is the one parameter of this model and is the same for every GPU and precision.
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// Inverse of the standard normal CDF, p in (0, 1).
double normal_quantile(double p);

class StepJitter {
public:
  StepJitter(double cv, int ranks);
  /// Factor on the compute time of rank index `rank` (0..ranks-1) in iteration `iteration`.
  double factor(int rank, int iteration) const;
  double cv() const { return cv_; }
  /// The slowest rank's factor in any iteration.
  double max_factor() const;
  /// Deals the statistics over groups (above): `group_of[r]` is rank r's group, 0..G-1, every group
  /// of the same size; `what` names the groups in the note ("pipeline stages").
  void deal_over_groups(const std::vector<int>& group_of, const std::string& what);
  /// How the statistics go to the ranks, for the report's note.
  std::string dealing() const;

private:
  double cv_;
  std::vector<double> z_;   ///< expected order statistics, ascending
  std::vector<int> slot_;   ///< per rank: its statistic before rotation (empty: the rank itself)
  std::string dealt_over_;  ///< "64 pipeline stages", or empty
};

/// The scenario's jitter_cv (default kDefaultJitterCv), for `ranks` synchronising ranks.
StepJitter step_jitter(const Scenario& scenario, int ranks);
constexpr double kDefaultJitterCv = 0.015;

/// Stretches every Compute task of the graph on one of `ranks` (device indices) by its rank's
/// factor in the task's iteration. Returns a note for the report.
std::string apply_step_jitter(TaskGraph& graph, const std::vector<int>& ranks, const StepJitter& jitter);

/// The same for a folded plan (folded_comms.hpp): the representative `devices[i]` stands for the
/// ranks `images[i]` (indices 0..ranks-1) and runs at the slowest one's factor in each iteration,
/// as the collectives it joins wait for that one. An upper bound where images synchronise less
/// often than every collective (data-parallel replicas of a pipeline meet once per iteration).
/// `factors` receives, per representative and iteration, the factor it ran at (the images' mean
/// factor is 1: the expected order statistics' mean is 0).
std::string apply_folded_step_jitter(TaskGraph& graph, const std::vector<int>& devices,
                                     const std::vector<std::vector<int>>& images, const StepJitter& jitter, int ranks,
                                     std::vector<std::vector<double>>& factors);

}  // namespace dtsim
