// Compute slowed by FSDP's own collectives running beside it: the AllGather of the next unit
// during a unit's forward, and during its backward the prefetched AllGather of the next unit and
// the ReduceScatter of the previous one. Each is an NCCL kernel with one CTA per channel on an SM
// for its whole run and HBM traffic for the bytes it receives, so the compute it overlaps runs at
// 1 - loss (interference.hpp, the model DDP's buckets use; no fitted factor).
//
// The collectives of one shard group queue on one NCCL stream (ProcessGroupNCCL: one stream per
// device and process group), queued as FSDP issues them: in forward the AllGather two units ahead
// at the end of each unit's forward (the rate limiter lets two run ahead of the frees), in backward
// the ReduceScatter of the unit just done and the prefetched AllGather of the unit after next at
// the end of each unit's backward. Their times are NCCL's cost model (tuning.cc) for the call, as
// for DDP. Plan-time estimate: the collectives are assumed to start when queued (not delayed by
// another rank), and a micro-step's compute is assumed to run without other gaps.
#pragma once

#include "sim/strategies/interference.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <vector>

namespace dtsim {

/// One micro-step of one rank, in segments of forward order (FSDP's unit segments).
struct FsdpComputeSegments {
  std::vector<double> forward_s;   ///< forward seconds of each segment
  std::vector<double> backward_s;  ///< backward seconds of each segment (recomputation included)
  /// Per segment: the AllGather that makes its unit's parameters ready for its forward (seconds 0
  /// when the segment's unit is already gathered), for its backward, and the ReduceScatter issued
  /// when its backward ends (seconds 0 where none).
  std::vector<InflightCollective> gather, gather_backward, reduce;
};

/// Extra seconds per segment (forward order) from running beside the collectives.
struct FsdpSlowdown {
  std::vector<double> forward, backward;
  double total() const;
};

/// `reduce_weight`: the share of micro-steps that reduce-scatter (1, or 1/M under no_sync).
FsdpSlowdown fsdp_compute_slowdown(const FsdpComputeSegments& seg, const GpuSpec& gpu, double memory_bound,
                                   double reduce_weight);

}  // namespace dtsim
