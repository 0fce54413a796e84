// ZeRO-3's parameter coordinator (deepspeed/runtime/zero/partitioned_param_coordinator.py) over
// one forward and backward, at dtsim's layer granularity: which uses of a module gather it, at
// which earlier use each gather is issued, and how many partitioned elements are gathered at once.
//
// What DeepSpeed does, from the recorded trace of module uses (the forward, then the backward in
// reverse):
// - fetch_sub_module: a module not gathered is gathered now; then, with a complete trace, the
//   coordinator walks its queue of the uses to come and gathers those not gathered yet, at most
//   min(stage3_max_live_parameters - elements gathered now, stage3_prefetch_bucket_size) new
//   elements per fetch (the first one whatever its size); so the prefetch runs ahead of compute
//   until stage3_max_live_parameters elements are gathered or in flight.
// - release_sub_module (__params_to_release): after its use a module stays gathered when it is used
//   again before stage3_max_reuse_distance elements of other modules' parameters have gone by, or
//   when the prefetch walk has already passed its next use (it skipped that use as gathered; "Don't
//   release params whose reuse was skipped by prefetch"). So the modules gathered ahead at the end
//   of the forward stay gathered into the backward.
#pragma once

#include "sim/model/model.hpp"

#include <cstddef>
#include <vector>

namespace dtsim {

/// Per layer: the elements stage 3 partitions (parameter tensors above the persistence threshold).
std::vector<double> partitioned_elements(const Model& model, double threshold);

/// The parameter tensors stage 3 keeps whole on every GPU, their elements in the model's order:
/// those of at most `threshold` elements (parameter_offload.py mark_persistent_parameters:
/// ds_numel <= param_threshold; stage3_model_persistence_threshold's default sys.maxsize bounds none).
std::vector<double> persistent_tensors(const Model& model, double threshold);

/// The reuse rule after a layer's forward: whether its next use, its backward, comes before
/// `distance` elements of the modules used in between have gone by (all of their parameters,
/// persistent ones too: ds_numel). A layer `recomputed` is used twice in the backward (its forward
/// re-run, then its backward).
std::vector<bool> kept_to_backward(const Model& model, const std::vector<bool>& recomputed, double distance);

struct Stage3Fetches {
  std::vector<std::size_t> uses;   // the layers with partitioned elements: forward order, then backward order
  std::size_t forward_uses = 0;    // the first ones
  /// Per use: the uses whose gathers are issued at it, in order: its own first (when its module was
  /// not gathered), then those it prefetches, which DeepSpeed gathers together in one coalesced call.
  std::vector<std::vector<std::size_t>> issued;
  /// Per use: whether a gather for that use serves it (false: gathered since an earlier use).
  std::vector<bool> gathered_for;
  double peak_elements = 0;        // the most partitioned elements gathered or in flight at once
  std::size_t backward_gathers() const;
  std::size_t forward_gathers() const;
};

/// The coordinator over one forward and backward. `elements` per layer (partitioned_elements),
/// `kept` per layer (kept_to_backward).
Stage3Fetches stage3_fetches(const std::vector<double>& elements, const std::vector<bool>& kept, double prefetch_bucket,
                             double max_live);

}  // namespace dtsim
