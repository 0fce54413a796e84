// See roofline.hpp.
#include "sim/strategies/roofline.hpp"

#include "sim/strategies/megatron_stage.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace dtsim {

namespace {

/// A dropout's bool mask: one byte per element (ATen native_dropout).
constexpr double kMaskBytes = 1;
/// The fp32 of the eager RMSNorm's and rotary embedding's upcast (`x.float()`).
constexpr double kFp32Bytes = 4;

/// A cast between the element type and fp32 (`x.float()`, `.type_as(x)`): read one, write the other;
/// no kernel when the activations are fp32 already (`Tensor.float()` returns the tensor itself).
double cast_bytes(double e) { return e == kFp32Bytes ? 0 : e + kFp32Bytes; }

/// An eager RMSNorm per element, as torchtitan's RMSNorm, fms's LayerNormParameterized
/// (use_high_precision_pow) and Hugging Face's LlamaRMSNorm write it:
///   y = weight * (xf * rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x),  xf = x.float()
/// one ATen kernel per operation (the per-token mean, add and rsqrt are 1/hidden of the bytes).
///   forward: cast up, pow (read f, write f), mean (read f), x * rsqrt (read f, write f), cast down,
///            * weight (read e, write e)
///   backward (derivatives.yaml): * weight: dx = dy w (2 e) and dw = sum(dy y) (3 e + e); cast down's
///            cast back; x * r: dx = dy r (2 f) and dr = sum(dy x) (3 f + f); mean: the expanded
///            gradient / hidden (write f); pow: dy * (2 x.pow(1)) (pow 2 f, mul 2 f, mul 3 f); the two
///            gradients of xf summed (3 f); the upcast's cast back.
/// bf16: 36 B forward and 92 B backward per element, against the fused kernel's 4 and 6.
KernelWork eager_rmsnorm(double e, bool backward)
{
  const double f = kFp32Bytes;
  if (!backward)
    return {0, cast_bytes(e) + 2 * f + f + 2 * f + cast_bytes(e) + 2 * e};
  return {0, (2 * e + 4 * e) + cast_bytes(e) + (2 * f + 4 * f) + f + (2 * f + 2 * f + 3 * f) + 3 * f + cast_bytes(e)};
}

bool keeps_input(const std::string& op)
{
  // derivatives.yaml: gelu, silu, tanh and relu differentiate through their input or result
  return op == "gelu" || op == "gelu_tanh" || op == "silu" || op == "tanh" || op == "relu" || op == "relu_";
}

/// Bytes per output element of a layer's `then` chain, forward and backward (`e` element bytes).
KernelWork then_chain(const std::vector<std::string>& ops, double e, bool fused, bool backward)
{
  double bytes = 0;
  if (fused && !ops.empty()) {
    // One kernel: read the input, write the output; plus each op's extra operand or mask.
    bytes = 2 * e;
    for (const auto& op : ops) {
      if (op == "dropout")
        bytes += kMaskBytes;
      else if (op == "add" || op == "add_")
        bytes += backward ? 3 * e : e;  // forward: the residual; backward: its sum at the fork
      else if (op == "mul")
        bytes += backward ? 3 * e : e;  // forward: the other operand; backward: both saved, a second gradient
      else if (backward && keeps_input(op))
        bytes += e;
      // "rotary": its reads and writes are the chain's own
    }
    return {0, bytes};
  }
  for (const auto& op : ops) {
    if (op == "dropout")
      bytes += 2 * e + kMaskBytes;  // read, write, mask (backward: read dy and the mask, write dx)
    else if (op == "add" || op == "add_")
      bytes += 3 * e;  // two operands, one result (backward: the residual gradients summed)
    else if (op == "mul")
      bytes += backward ? 5 * e : 3 * e;
    else if (keeps_input(op))
      bytes += backward ? 3 * e : 2 * e;
    else if (op == "rotary")
      // torchtitan's apply_rotary_emb: x.float() viewed as complex pairs, times the (cached) complex
      // frequencies, .type_as(x): cast up, complex mul (read f, write f), cast down; backward the same
      // three (the product's gradient is dy times the conjugate frequencies). Other forms move about
      // as much or more, not told apart: Hugging Face's rotate_half (q cos + rotate_half(q) sin, five
      // kernels in e) 10 e; fms's adjusted_qk (a broadcast fp32 product of twice the elements, summed)
      // about 36 B forward.
      bytes += cast_bytes(e) + 2 * kFp32Bytes + cast_bytes(e);
  }
  return {0, bytes};
}

double arch_or(const Model& model, const char* key, double fallback)
{
  const auto it = model.arch.find(key);
  return it == model.arch.end() ? fallback : it->second;
}

}  // namespace

double roofline_memory_efficiency(const ComputeSpec& spec)
{
  return spec.memory_efficiency > 0 ? spec.memory_efficiency : kDefaultMemoryEfficiency;
}

double kernel_seconds(const KernelWork& k, const RooflineRates& rates)
{
  return std::max(k.flops / rates.flops_per_s, k.bytes / rates.bytes_per_s);
}

LayerTimes roofline_layer_times(const Model& model, const RooflineSettings& s, double samples)
{
  const double T = std::max(1, s.split.tensor);
  const double e = s.element_bytes;
  const auto sec = [&s](const KernelWork& k) { return kernel_seconds(k, s.rates); };
  // The share of a whole-hidden tensor (LayerNorm in/out, a row-parallel linear's output) one rank
  // holds: all of it under tensor parallelism, 1/T with sequence parallelism.
  const double whole = s.split.sequence_parallel ? 1 / T : 1.0;
  const std::vector<bool> row_parallel = row_parallel_linears(model);
  bool dropout = false;
  for (const auto& l : model.layers)
    for (const auto& op : l.then)
      dropout = dropout || op == "dropout";
  std::map<std::string, double> out_elems;  // per sample, by layer name (Layer::input)
  const double seq = arch_or(model, "seq_len", 0), heads = arch_or(model, "heads", 0);

  LayerTimes t;
  t.fwd.resize(model.layers.size());
  t.bwd.resize(model.layers.size());
  double previous = model.input_elems;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    const auto named = l.input.empty() ? out_elems.end() : out_elems.find(l.input);
    const double in = named == out_elems.end() ? previous : named->second;
    const double out = l.activation_elems;
    double fwd = 0, bwd = 0;          // one rank, seconds
    double out_share = 1 / T;         // of the output one rank holds (for the then chain)
    if (l.kind == "linear" && l.fwd_flops > 0 && out > 0) {
      const double K = l.fwd_flops / (2 * out);  // fan_in
      // fan_out: from the weight (K x N, the first tensor), else (a head tied to the embedding, whose
      // only tensor may be its bias) the vocabulary when the output is per token of it, else one token.
      const double w = l.param_tensors.empty() ? 0 : static_cast<double>(l.param_tensors.front());
      const double vocab = arch_or(model, "vocab", 0);
      const double N = w >= K && std::fmod(w, K) == 0 ? w / K : vocab > 0 && std::fmod(out, vocab) == 0 ? vocab : out;
      const double M = samples * out / N;  // tokens
      const bool row = row_parallel[i];
      const KernelWork gemm{2 * M * N * K / T,
                            e * (M * K * (row ? 1 / T : 1) + K * N / T + M * N * (row ? 1 : 1 / T))};
      fwd = sec(gemm);
      bwd = 2 * sec(gemm);  // dX = dY W^T and dW = X^T dY: the same FLOPs and operands' sizes
      if (row)
        out_share = whole;
    } else if (l.kind == "attention" && seq > 0 && heads > 0 && out > 0) {
      const double d = out / (seq * heads);  // head dimension
      const double n = samples * heads / T;  // (sample, head) pairs on one rank
      const double scores = n * seq * seq;
      if (s.attention == AttentionKernel::Sdpa) {
        const KernelWork flash{n * 4 * seq * seq * d, n * 4 * seq * d * e};
        fwd = kernel_seconds(flash, {s.rates.flops_per_s * s.attention_rate, s.rates.bytes_per_s});
        bwd = 2 * fwd;
      } else {
        const KernelWork bmm{n * 2 * seq * seq * d, n * (seq * seq + 2 * seq * d) * e};  // QK^T, P V, and backward's four
        const double softmax_passes = s.fused_elementwise ? 1 : 3;  // fused scale-mask-softmax, or scale, mask, softmax
        const double drop = dropout ? 2 * e + kMaskBytes : 0;
        fwd = 2 * sec(bmm) + sec({0, scores * (softmax_passes * 2 * e + drop)});
        bwd = 4 * sec(bmm) + sec({0, scores * (3 * e + (softmax_passes - 1) * 2 * e + drop)});
      }
    } else if (l.kind == "layernorm") {
      const double elems = samples * out * whole;
      if (l.op == "rms" && !s.fused_elementwise && !s.fused_rmsnorm) {  // an eager RMSNorm: one kernel per operation
        fwd = sec({0, eager_rmsnorm(e, false).bytes * elems});
        bwd = sec({0, eager_rmsnorm(e, true).bytes * elems});
      } else {  // one kernel (F.layer_norm, or a fused / compiled RMSNorm)
        fwd = sec({0, 2 * e * elems});
        bwd = sec({0, 3 * e * elems});
      }
      out_share = whole;
    } else if (l.kind == "embedding") {
      const double elems = samples * out;  // every rank writes the whole lookup (masked to its vocabulary)
      fwd = sec({0, 2 * e * elems});
      bwd = sec({0, 3 * e * elems});
      out_share = whole;
    } else {
      const double params = static_cast<double>(l.params());
      const KernelWork k{samples * l.fwd_flops / T, e * (samples * (in + out) + params) / T};
      fwd = sec(k);
      bwd = l.fwd_flops > 0 ? 2 * fwd : sec({0, e * samples * (2 * in + out) / T});
    }
    const double chain_elems = samples * out * out_share;
    fwd += sec({0, then_chain(l.then, e, s.fused_elementwise, false).bytes * chain_elems});
    bwd += sec({0, then_chain(l.then, e, s.fused_elementwise, true).bytes * chain_elems});
    t.fwd[i] = T * fwd;
    t.bwd[i] = T * bwd;
    out_elems[l.name] = out;
    if (out > 0)
      previous = out;
  }
  return t;
}

}  // namespace dtsim
