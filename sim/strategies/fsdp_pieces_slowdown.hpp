// FSDP's unit pieces made slower by the shard group's collectives running beside them
// (fsdp_interference.hpp), before the plan's graph is built: the per-segment collectives come from
// NCCL's cost model (choose_collective_algorithm) for the units' AllGathers and ReduceScatters.
#pragma once

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// What the pieces' owner knows of its shard group's collectives.
struct FsdpUnitCollectives {
  std::vector<int> shard_devices;     ///< one shard group's GPUs (device indices), in rank order
  std::vector<int> backward_devices;  ///< the backward AllGather's group (a smaller re-shard world), or the same
  std::vector<double> gather_bytes, reduce_bytes;  ///< per unit, nccl-tests' count (the whole unit)
  std::vector<int> first_segment, last_segment;    ///< per unit: its first and last forward segment
  bool gather_backward = true;        ///< the units are gathered again for backward
  double reduce_weight = 1;           ///< share of micro-steps that reduce-scatter (1/M under no_sync)
  /// share of micro-steps that AllGather in forward (1/M where FSDP1 keeps its units gathered across
  /// no_sync micro-steps: keeps_gathered_across_micro_steps)
  double gather_weight = 1;
};

struct FsdpPiecesSlowdown {
  double seconds_per_micro_step = 0;
  int channels = 0;                   ///< the most channels (CTAs) of one of the collectives
};

/// Scales each segment's pieces of `pieces` (one vector per segment of `units`) by its share of the
/// slowdown; `memory_bound`: memory_bound_share of the model's compute.
FsdpPiecesSlowdown slow_pieces_beside_collectives(std::vector<std::vector<StagePiece>>& pieces, const ShardUnits& units,
                                                  const FsdpUnitCollectives& c, const Topology& topology,
                                                  const NcclFilter& filter, double memory_bound);

/// The report's note.
std::string fsdp_slowdown_note(const GpuSpec& gpu, int channels, double memory_bound, double seconds_per_iteration);

}  // namespace dtsim
