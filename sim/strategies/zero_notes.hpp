// The notes a ZeRO run prints about its plan: how its gradients are bucketed and reduced, what
// stage 3 gathers and keeps, and what MiCS, hpZ, qwZ and qgZ change. Formatting only: the figures
// come from the plan builder (zero.cpp).
#pragma once

#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/zero3_coordinator.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim {

/// What zero.cpp found while building the plan, as the notes read it.
struct ZeroPlanFacts {
  int gpus = 0;       ///< data-parallel ranks
  int shard = 0;      ///< GPUs a partition spans (MiCS: its group; else every rank)
  int secondary = 0;  ///< hpZ's group (shard when off)
  int per_node = 0;   ///< GPUs per node
  std::size_t buckets = 0;  ///< gradient buckets
  std::size_t reduces = 0;  ///< Reduce calls to the partitions' owners (use_multi_rank_bucket_allreduce false)
  bool reduce_to_owners = false;
  bool hooks = false;         ///< stages 1-2 reduce as buckets fill in backward
  double gather_pieces = 0;   ///< stages 1-2: AllGathers of the updated parameters
  const Stage3Fetches* fetches = nullptr;  ///< stage 3: the coordinator's schedule
  std::size_t reused = 0;     ///< stage 3: modules kept by the reuse rule
  double partitioned = 0, params = 0;  ///< stage 3: elements partitioned, of the model's
  double secondary_elements = 0;       ///< hpZ: the secondary copy's elements per GPU
  double quant_group_elements = 0;     ///< qwZ: elements per fp32 scale
  double dequantize_s = 0;             ///< qwZ: seconds per iteration on each GPU
  bool qgz = false;                    ///< qgZ runs (more than one node)
  std::size_t quantized_tensors = 0, gradient_tensors = 0;  ///< qgZ: on its path, of all
};

/// The notes, in the order the run prints them.
std::vector<std::string> zero_plan_notes(const ZeroOptions& opt, const ZeroPlanFacts& f);

}  // namespace dtsim
