// Stage 3's parameter gathers in the plan, at each use of a module as the coordinator schedules them
// (zero3_coordinator.hpp): the use's own module when not gathered, then the modules prefetched there,
// each call after the compute before it; the partitions from the host first under offload_param;
// hpZ's gathers from the secondary groups on their own stream; qwZ's int8 gathers with their scales,
// dequantized at the first wait; and, after each step, the gather of the persistent parameters.
#pragma once

#include "sim/model/model.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/zero3_coordinator.hpp"
#include "sim/strategies/zero_tally.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <cstddef>
#include <vector>

namespace dtsim {

/// What the gathers read; every reference must outlive the Zero3Gathers.
struct Zero3GatherInputs {
  const Model& model;
  const ZeroOptions& opt;
  const Stage3Fetches& fetches;
  const std::vector<double>& elements;                 ///< per layer: its partitioned elements
  const std::vector<std::vector<int>>& shard;          ///< the partition groups
  const std::vector<std::vector<int>>& secondary;      ///< hpZ's groups
  const GpuSpec& gpu;
  int shard_size = 1;      ///< S
  int secondary_size = 1;  ///< H (S without hpZ)
  bool distributed = true; ///< more than one rank
  double model_bytes = 2;  ///< per parameter in the module's dtype
};

class Zero3Gathers {
public:
  /// qwZ: each rank's elements per fp32 scale, CUDAQuantizer.target_group_size.
  static constexpr double kQuantGroupElements = 8000;

  Zero3Gathers(ZeroTally& tally, const Zero3GatherInputs& in);

  /// The gathers issued at use `use` in micro-step `m`, then the wait for the use's own.
  void fetch(std::size_t use, int m);
  /// Stage 3 over more than one rank, after the step: the persistent parameters gathered again, the
  /// compute stream waiting for them.
  void gather_persistent();
  /// qwZ's dequantization, seconds per iteration on each GPU (tallied in the first iteration).
  double dequantize_s() const { return dequantize_s_; }

private:
  bool from_secondary(std::size_t u, int m) const;
  void gather(const std::size_t* first, const std::size_t* last, const char* what, int m);

  ZeroTally& tally_;
  Zero3GatherInputs in_;
  std::vector<std::vector<int>> gathered_;
  std::vector<double> dequantized_at_;  // elements the use's wait dequantizes
  double dequantize_s_ = 0;
  std::vector<double> persistent_;  // stage 3: the persistent parameter tensors' elements
};

}  // namespace dtsim
