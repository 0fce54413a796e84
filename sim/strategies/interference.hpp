// Compute slowed while NCCL kernels run beside it. A collective is a CUDA kernel with one block
// (CTA) per channel, each resident on one SM for the whole operation, and its data passes through
// HBM: the bytes a peer writes into this GPU's receive buffer, read back by the kernel, and the
// local operand it reduces with. Kernels of backward that overlap a bucket's AllReduce therefore
// run on fewer SMs (compute-bound kernels) or with less HBM bandwidth (memory-bound kernels).
//
// Model (first principles, no fitted factor):
//   SM share taken        s = channels / SMs                              (one CTA per channel)
//   HBM share taken       h = kHbmBytesPerBusByte x bus bytes/s / HBM bandwidth
//   memory-bound share    m = roofline over the model's layers (below)
//   compute rate while the collective runs: 1 - ((1 - m) s + m h)
// The collective's time in flight comes from NCCL's own cost model (tuning.cc, as dtsim's
// collectives use it), queued one at a time on the NCCL stream after each bucket is ready.
// Not modelled: the loader's host-to-device copies (copy engines, no SMs; their HBM traffic is
// < 1% of HBM bandwidth), skew between ranks (the plan-time estimate uses the rank's own backward),
// and kernels that could co-reside with an NCCL block on one SM (an upper bound on the SM share).
#pragma once

#include "sim/model/model.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// Local HBM bytes moved per byte a rank receives on the bus in a ring/tree step: the peer's
/// write into the receive buffer, the kernel's read of it, and the read of the local operand it is
/// reduced with (or, in the all-gather half, the write of the result). NCCL src/device/prims_simple.h:
/// recvReduceSend / recvReduceCopySend / recvCopySend each touch the received chunk and one local
/// buffer.
inline constexpr double kHbmBytesPerBusByte = 3.0;

/// Share of a model's compute time spent in memory-bound kernels at a precision on a GPU, by the
/// roofline model (Williams, Waterman, Patterson, CACM 52(4), 2009): a layer takes
/// max(FLOPs / peak FLOP/s, bytes / HBM bandwidth) with bytes = input + output activations and
/// weights at the precision's element size, for a batch of `batch` samples; m = time of the layers
/// where bytes win / total. Backward moves about twice the bytes and FLOPs of forward: same share.
double memory_bound_share(const Model& model, const GpuSpec& gpu, Precision precision, double batch);

/// One collective of a rank, as the interference model sees it.
struct InflightCollective {
  double seconds = 0;    ///< NCCL's cost-model time of the operation
  double bus_bytes = 0;  ///< bytes this rank receives over the bus (AllReduce: 2 (n-1)/n x size)
  int channels = 1;      ///< CTAs, one per channel
};

/// Fraction of compute throughput lost while `c` runs (0 .. 0.95).
double compute_loss(const InflightCollective& c, const GpuSpec& gpu, double memory_bound);

/// Backward of one rank in segments: segment k ends when bucket k is ready (the last segment
/// closes backward). The buckets' collectives run one after another on the NCCL stream, each from
/// max(its bucket ready, the previous one's end). Returns each segment's extra seconds from running
/// beside them (segment 0 never has a collective of this step in flight).
std::vector<double> backward_slowdown(const std::vector<double>& segment_s,
                                      const std::vector<InflightCollective>& collectives, const GpuSpec& gpu,
                                      double memory_bound);

/// The report's note: what the slowdown is made of.
std::string nccl_slowdown_note(const GpuSpec& gpu, int channels, double memory_bound, double seconds_per_iteration);

}  // namespace dtsim
