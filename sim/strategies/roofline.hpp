// Per-layer compute time by the roofline model (Williams, Waterman, Patterson, "Roofline", CACM
// 52(4), 2009), kernel by kernel: training.compute.model "roofline".
//
// Each layer runs as the kernels PyTorch / Megatron-LM launch for it; a kernel takes the longer of
//   FLOPs / (peak FLOP/s x efficiency)            (tensor-core math; `efficiency` is the scenario's)
//   bytes moved / (HBM bandwidth x memory_efficiency)
// so GEMMs of a transformer run at the calibrated efficiency, and the elementwise kernels around
// them (LayerNorm, bias + GeLU, dropout + residual add, softmax and dropout over the attention
// scores, embedding lookups) at the speed of memory. Their bytes grow as s b h (and a s^2 b), the
// GEMMs' FLOPs as s b h^2: the memory-bound share falls as the hidden size grows, which is why a
// small model reaches a lower share of peak (Korthikanti et al. 2022, arXiv 2205.05198, Table 5:
// model FLOPs utilisation 41.5% at 22B, 51.4% at 175B on the same A100s).
//
// Bytes per kernel, e = the activations' element bytes (4 in fp32/tf32, else 2), a dropout mask 1 B
// (torch native_dropout's bool mask):
//   linear       a GEMM of M tokens x K in -> N out: forward X W, backward dX = dY W^T and dW = X^T dY,
//                2 M N K FLOPs and (M K + K N + M N) e bytes each
//   attention    "eager" (training.attention; Megatron-LM before flash attention): per head
//                QK^T and P V as batched GEMMs (2 s^2 d FLOPs, (s^2 + 2 s d) e bytes each; backward
//                four), the scores' softmax (Megatron's fused scale-mask-softmax: read + write, 2 e
//                s^2; unfused: scale, mask and softmax, 6 e s^2; backward reads y and dy, writes dx)
//                and their dropout (2 e + 1 per score each way) when the model has dropout;
//                "sdpa": one fused kernel (4 s^2 d FLOPs, q k v o), backward twice its FLOPs, at
//                the GEMMs' FLOP rate x training.attention_kernel's factor (attention_rate.hpp)
//   layernorm    read x, write y: 2 e per element; backward reads x and dy, writes dx: 3 e; an
//                RMSNorm (op "rms") run eagerly (training.norm_kernel "eager", not fused_elementwise)
//                is its seven ATen kernels with an fp32 upcast: 36 B forward, 92 B backward per bf16
//                element (roofline.cpp)
//   embedding    a gather, read and write each row: 2 e per element; backward 3 e
//   then ops     fused (Megatron's bias_gelu and bias_dropout_add jit fusions, as memory_timeline's
//                `megatron`): a layer's whole `then` chain is one kernel that reads its input once
//                (plus a residual per add, an operand per mul) and writes its output once (plus a
//                mask per dropout); unfused: each op its own kernel, as listed in roofline.cpp
//                (a rotary embedding, "rotary": cast to fp32, complex multiply, cast back, 20 B per
//                bf16 element each way; fused, only the chain's read and write)
//                fused_elementwise: Megatron-LM's own fusions, or torch.compile (training.compile),
//                whose Inductor fuses the elementwise ops and the RMSNorm into generated kernels
//   other kinds  one kernel of the layer's FLOPs over its input, output and weights; backward two
//                such kernels (FLOPs) or one reading x and dy and writing dx (no FLOPs)
// Backward's residual gradients are summed where the residual forks: one add (3 e) per "add".
//
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019; sequence parallelism Korthikanti et al.
// 2022, section 4.2.2): GEMMs, attention heads and what follows a column-parallel linear are split
// over the T ranks; LayerNorms, embedding outputs and what follows a row-parallel linear are whole
// on every rank, split only with sequence parallelism (the embedding's lookup itself writes the
// whole output on every rank). Times are returned summed over the tensor group (T x one rank's),
// as stage_pieces divides them by T.
//
// Not modelled: the vocabulary-parallel cross entropy's fp32 passes over the logits (~0.2% of the
// 22B step of megatron_runs.csv), bias adds as separate kernels (fused into the GEMM's epilogue or the
// elementwise chain), kernel launch gaps, the GEMMs' tile and wave quantisation (the H200 table in
// calibration/measured/h200-1gpu-2026-11-27-gemm/ shows the 22B and 175B per-rank shapes within 3%
// of each other: no shape factor is applied).
#pragma once

#include "sim/model/model.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/saved_tensors.hpp"

namespace dtsim {

/// Fraction of the datasheet HBM bandwidth a memory-bound kernel reaches when the scenario does not
/// say (training.compute.memory_efficiency), measured: a 64 MiB device-to-device cudaMemcpyAsync
/// moves 3,529 GB/s of HBM traffic (read + write; bench_link.cu counts 2 x the bytes copied) on an
/// H200 of 4,800 GB/s: 0.735 (calibration/measured/h200-1gpu-2026-11-26/link.txt, d2d column).
/// Taken as the same fraction of the datasheet on other HBM GPUs (A100's HBM2e was not measured
/// here). The kernels it times (LayerNorm, softmax, dropout with its random numbers) do more per
/// byte than a copy. dtsim's older figure for memory-bound kernels, kMemoryBoundFraction 0.85
/// (optimizer_step.hpp, "a STREAM-like copy reaches 80-90%", unmeasured), stays with the "flops"
/// model; the README gives the Megatron table at both.
constexpr double kDefaultMemoryEfficiency = 3529.12 / 4800.0;

/// training.compute.memory_efficiency, or kDefaultMemoryEfficiency when not given.
double roofline_memory_efficiency(const ComputeSpec& spec);

/// One kernel's work.
struct KernelWork {
  double flops = 0;
  double bytes = 0;
};

/// The two roofs a kernel runs under.
struct RooflineRates {
  double flops_per_s = 0;  ///< peak x efficiency
  double bytes_per_s = 0;  ///< HBM bandwidth x memory_efficiency
};

/// max(flops / flops_per_s, bytes / bytes_per_s).
double kernel_seconds(const KernelWork& k, const RooflineRates& rates);

struct RooflineSettings {
  RooflineRates rates;
  double element_bytes = 2;   ///< activations' bytes per element
  AttentionKernel attention = AttentionKernel::Sdpa;
  double attention_rate = 1.0;  ///< the sdpa kernel's FLOP rate over the GEMMs' (attention_rate.hpp)
  bool fused_elementwise = false;  ///< Megatron-LM's fused elementwise kernels, or torch.compile's
  bool fused_rmsnorm = false;      ///< an RMSNorm as one kernel (training.norm_kernel "fused")
  TensorSplit split;
};

/// Forward and backward seconds per layer for `samples` samples, summed over the tensor group.
LayerTimes roofline_layer_times(const Model& model, const RooflineSettings& settings, double samples);

}  // namespace dtsim
