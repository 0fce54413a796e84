// The rate of the fused attention kernel (training.attention "sdpa") against the GEMMs', by the
// tensor-core instructions it is built from (training.attention_kernel).
//
// Hopper (compute capability 9.x) added warpgroup MMA (wgmma), asynchronous and issued by four warps
// at once; the Ampere-generation mma.sync that earlier kernels use still runs there, but reaches only
// about 2/3 of the Hopper tensor cores' peak (Shah et al., "FlashAttention-3", arXiv 2407.08608,
// section 2.2, citing the microbenchmarks of Luo et al., arXiv 2402.13499). cuBLAS's GEMMs use wgmma
// on Hopper; FlashAttention 1 and 2, PyTorch SDPA's flash and memory-efficient backends, and Triton
// flash attention compiled without Hopper support (llm-foundry's attn_impl "triton", on
// triton_pre_mlir, whose docstring says it was tested on A100 only) use mma.sync. Such a kernel is
// taken to reach the same share of its instruction's roof as the GEMMs reach of theirs (the
// scenario's compute efficiency), so it runs at 2/3 of their FLOP rate. For scale, FlashAttention-2
// reaches 50-73% of the A100's peak (Dao, arXiv 2307.08691) and 35% of the H100's (arXiv 2407.08608,
// abstract): about 0.5-0.7 of its A100 share.
//
// Kernels built on wgmma (FlashAttention-3, cuDNN's fused attention as PyTorch SDPA's cuDNN backend
// or Transformer Engine run it) and the eager attention's batched GEMMs (cuBLAS) run at the GEMMs'
// rate. Before Hopper mma.sync is the tensor cores' own instruction: no difference. Blackwell
// (10.x) is left at the GEMMs' rate too: no measurement of mma.sync against its tcgen05 was found.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <string>

namespace dtsim {

/// Throughput of mma.sync over the Hopper tensor cores' peak (arXiv 2407.08608, section 2.2).
inline constexpr double kHopperMmaSyncShareOfPeak = 2.0 / 3.0;

/// The fused attention kernel's FLOP rate over the GEMMs' on `gpu` (1 when they run alike).
double attention_rate_factor(const TrainingSpec& training, const GpuSpec& gpu);

/// training.attention_kernel's spelling.
const char* to_string(FusedAttentionKernel kernel);

/// A note for the compute line when attention runs slower than the GEMMs ("" otherwise).
std::string attention_rate_note(const TrainingSpec& training, const GpuSpec& gpu);

}  // namespace dtsim
