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
  double optimizer_s = 0;    ///< optimizer step per iteration (a measured profile's; FLOPs: with_optimizer_step)
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

/// How Megatron-LM's tensor parallelism splits a layer's work (read by the roofline model only: the
/// other sources scale FLOPs, which every split divides by the degree alike).
struct TensorSplit {
  int tensor = 1;                  ///< ranks of a tensor-parallel group
  bool sequence_parallel = false;  ///< LayerNorms and dropouts split too (Korthikanti et al. 2022)
};

/// With training.compute.model "roofline" (roofline.hpp) each layer's times are its kernels' on one
/// of `split.tensor` ranks, times the tensor degree (stage_pieces divides by it): what no rank
/// splits (LayerNorm without sequence parallelism) counts whole on each rank.
LayerTimes layer_times(const Model& model, const Scenario& scenario, const GpuSpec& cluster_gpu, double samples,
                       double half_efficiency_samples = 0, const TensorSplit& split = {});

/// `times` with, when compute comes from FLOPs and no profile measured the step, the optimizer step
/// of one GPU holding all `params` (optimizer_step.hpp's optimizer_seconds, the scenario's memory
/// rules): a DDP or DataParallel replica's, and the one GPU that speedups are measured against. A
/// measured step or throughput already holds it; a measured profile gives its own.
LayerTimes with_optimizer_step(LayerTimes times, const Scenario& scenario, double params, const GpuSpec& gpu);

/// Describes the compute source in one line for reports ("measured step 7.2 s at batch 128").
std::string describe_compute_source(const Scenario& scenario);

/// How the compute times are spread over the layers, for the report's "compute:" note
/// ("backward = 2 x forward, spread over layers by FLOP share", or the roofline's), with the
/// attention kernel's rate on `cluster_gpu` when it is not the GEMMs' (attention_rate.hpp).
std::string compute_spread_note(const Scenario& scenario, const GpuSpec& cluster_gpu);

/// The Profile source: measured per-layer times scaled from the profile's batch to `samples`
/// (anchored at that batch when half_efficiency_samples > 0); layers the profile lacks get the
/// profiled layers' time per FLOP (said in LayerTimes::note).
LayerTimes profiled_layer_times(const Model& model, const Scenario& scenario, double samples,
                                double half_efficiency_samples);

}  // namespace dtsim
