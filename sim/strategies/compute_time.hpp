// Per-layer forward and backward times of one GPU, from one of the scenario's compute sources:
// a measured single-GPU step time or throughput spread over the layers by FLOP share, or FLOPs
// divided by (peak x efficiency) (backward twice forward), or a measured per-layer profile
// (compute_profile_time.cpp).
// Small batches: with half_efficiency_samples h > 0 a GPU runs b samples at b / (b + h) of its
// large-batch rate (a kernel too small to fill the GPU), so t(b) = t_lin(b) * (b + h) / b; measured
// sources keep their measured time at their own batch (the linear rate is scaled to match).
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <vector>

namespace dtsim {

struct LayerTimes {
  std::vector<double> fwd;   ///< seconds per layer (model order)
  std::vector<double> bwd;
  double optimizer_s = 0;    ///< optimizer step per iteration (measured profiles only)
  std::string note;          ///< how the times were obtained, when a report should say so
  double fwd_total() const;
  double bwd_total() const;
  double step() const { return fwd_total() + bwd_total() + optimizer_s; }
};

/// Times for `samples` samples on one GPU of kind `cluster_gpu`. Measured sources scale linearly
/// from their batch_per_gpu to `samples`. Throws InputError (pointing at /training/compute).
/// strategy.half_efficiency_samples (0 when absent): a non-negative number of samples, at most 1e9
/// (far above any batch; a negative one made compute times negative). Errors name its pointer.
double half_efficiency_samples_of(const JsonReader& strategy);

LayerTimes layer_times(const Model& model, const Scenario& scenario, const GpuSpec& cluster_gpu, double samples,
                       double half_efficiency_samples = 0);

/// Describes the compute source in one line for reports ("measured step 7.2 s at batch 128").
std::string describe_compute_source(const Scenario& scenario);

/// The Profile source: measured per-layer times scaled from the profile's batch to `samples`
/// (anchored at that batch when half_efficiency_samples > 0); layers the profile lacks get the
/// profiled layers' time per FLOP (said in LayerTimes::note).
LayerTimes profiled_layer_times(const Model& model, const Scenario& scenario, double samples,
                                double half_efficiency_samples);

}  // namespace dtsim
