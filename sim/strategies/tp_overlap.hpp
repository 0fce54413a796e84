// The GEMMs that Megatron runs beside its asynchronous backward tensor-parallel collectives
// (megatron_stage.hpp, StagePiece::beside) made slower by them, before the plan's graph is built:
// each collective is an NCCL kernel with one CTA per channel on an SM for its whole run
// (interference.hpp; the GEMMs are compute-bound, so the SMs are what they lose). Its duration is
// NCCL's cost model (choose_collective_algorithm) for the call on the stage's tensor group.
// A GEMM of c seconds beside a collective of d seconds that takes a share L of the SMs runs
// c + min(d L, c L / (1 - L)): at 1 - L of its speed while the collective runs.
#pragma once

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct TpOverlapSlowdown {
  double seconds_per_micro_batch = 0;  ///< added to the stage's backward, one micro-batch
  int channels = 0;                    ///< the most channels (CTAs) of one of the collectives
};

/// Lengthens each piece's overlapped GEMMs (TpBeside::compute_s, and bwd_s with them);
/// `tp_devices`: one tensor-parallel group of the stage, in rank order.
TpOverlapSlowdown slow_gemms_beside_tp(std::vector<StagePiece>& pieces, const std::vector<int>& tp_devices,
                                       const Topology& topology, const NcclFilter& filter);

/// The report's note: the backward collectives overlapped and what that cost the GEMMs.
std::string tp_overlap_note(bool sequence_parallel, const GpuSpec& gpu, int channels, double seconds_per_iteration);

}  // namespace dtsim
