// Autograd's saved tensors, per layer kind and per operation after it. Every rule names where
// PyTorch keeps the tensor:
//   derivatives.yaml   = pytorch/tools/autograd/derivatives.yaml (the inputs a backward formula reads
//                        are the ones SavedVariable keeps; they are released after that node's backward)
//   autocast lists     = aten/src/ATen/autocast_mode.cpp (CUDA: lower_precision_fp ops run in fp16
//                        and cast their inputs; fp32 ops cast theirs to fp32; others run in the
//                        inputs' dtype, promoting mixed inputs); the casts of leaf weights are cached
//                        for the autocast region (cached_cast), the casts of activations are new tensors
// Dtypes: "compute" = 4 B (fp32/tf32) or 2 B (AMP, fp16, bf16); "stream" = the residual stream and
// what the fp32-list ops return: 4 B under fp32 and AMP (the weights are fp32, so embeddings and
// LayerNorm return fp32), 2 B under pure fp16/bf16.
#include "sim/strategies/saved_tensors.hpp"

#include "sim/util/json_reader.hpp"

#include <algorithm>
#include <map>

namespace dtsim {

namespace {

struct Tensor {
  double elems = 0;      // per sample
  double dtype = 4;      // bytes per element
  bool sharded = false;  // split over tensor-parallel ranks (heads or FFN columns)
  std::size_t made = 0;
  bool saved = false;
  bool op_saved = false;  // the output of an op torchtitan's op-level checkpointing saves (SavedTensor)
  bool whole = false;     // gathered over the tensor ranks (AutogradSettings::dtensor_tp): never split
  bool received = false;  // the previous pipeline stage's activation (SavedTensor::received)
  bool fused_silu = false;  // silu's output inside Megatron's fused SwiGLU: recomputed in backward
};

class Walk {
public:
  Walk(const Model& model, const AutogradSettings& s, ActivationPass& pass) : model_(model), s_(s), pass_(pass)
  {
    const bool half = s.precision == Precision::Fp16 || s.precision == Precision::Bf16;
    amp_ = s.precision == Precision::Amp;
    compute_ = (amp_ || half) ? 2 : 4;
    stream_ = half ? 2 : 4;
    for (const auto& l : model.layers)
      for (const auto& op : l.then)
        dropout_ = dropout_ || op == "dropout";
  }

  int make(double elems, double dtype, bool sharded)
  {
    tensors_.push_back({elems, dtype, sharded, layer_, false, false, false, false, false});
    made_.push_back(static_cast<int>(tensors_.size()) - 1);
    return static_cast<int>(tensors_.size()) - 1;
  }
  /// Bytes per sample of tensor `id` on one GPU.
  double bytes(int id) const
  {
    const Tensor& t = tensors_[static_cast<std::size_t>(id)];
    const bool split = !t.whole && (t.sharded || s_.sequence_parallel);
    return t.elems * t.dtype / (split ? s_.tensor_parallel : 1);
  }
  void save(int id)
  {
    Tensor& t = tensors_[static_cast<std::size_t>(id)];
    if (t.saved)
      return;  // kept already by an earlier layer: it lives until that layer's backward
    t.saved = true;
    pass_.saved.push_back({bytes(id), t.made, layer_, t.op_saved, t.received});
  }
  /// A new tensor that backward keeps.
  int keep(double elems, double dtype, bool sharded)
  {
    const int id = make(elems, dtype, sharded);
    save(id);
    return id;
  }

  void run(std::size_t first, std::size_t last, bool with_loss)
  {
    std::map<std::string, int> out_of;
    int cur = stage_input(first);
    std::vector<int> pending;  // outputs that the next layer does not read, waiting for a later reader
    for (std::size_t i = first; i < last; ++i) {
      const Layer& l = model_.layers[i];
      layer_ = i;
      made_.clear();
      int in = cur;
      if (!l.input.empty()) {
        pending.push_back(cur);
        const auto it = out_of.find(l.input);
        in = it != out_of.end() ? it->second : make(model_.layers[index_of(l.input)].activation_elems, compute_, false);
        pending.erase(std::remove(pending.begin(), pending.end(), in), pending.end());
      }
      int out = forward(l, in, pending);
      for (const auto& op : l.then)
        out = then(op, out, pending);
      out_of[l.name] = out;
      LayerPass lp;
      lp.param_elems = static_cast<double>(l.params());
      lp.weight_casts = casts_;
      casts_ = 0;
      double largest = 0;
      for (int id : made_) {
        if (!tensors_[static_cast<std::size_t>(id)].saved)
          lp.fwd_transient += bytes(id);
        largest = std::max(largest, bytes(id));
      }
      if (!tensors_[static_cast<std::size_t>(in)].saved)
        lp.fwd_transient += bytes(in);
      for (int id : pending)
        if (!tensors_[static_cast<std::size_t>(id)].saved)
          lp.fwd_transient += bytes(id);
      // Backward of the layer: the gradient of its output, of its input, and of its largest
      // intermediate (autograd's InputBuffer holds one gradient per edge until the node runs).
      lp.bwd_transient = bytes(out) + bytes(in) + largest;
      pass_.layers.push_back(lp);
      cur = out;
    }
    if (with_loss && last == model_.layers.size()) {
      pending.push_back(cur);
      loss(pending);
    }
  }

private:
  std::size_t index_of(const std::string& name) const
  {
    for (std::size_t i = 0; i < model_.layers.size(); ++i)
      if (model_.layers[i].name == name)
        return i;
    return 0;  // the loader guarantees an earlier layer of that name
  }

  /// The input of the pass: the model's input (an image in fp32 as the data loader gives it, or
  /// token ids, which only the embedding reads and saves as indices: counted with the batch), or
  /// the activation the previous pipeline stage sends.
  int stage_input(std::size_t first)
  {
    layer_ = first;
    if (first == 0) {
      const bool tokens = model_.layers[0].kind == "embedding";
      return make(tokens ? 0 : model_.input_elems, 4, false);
    }
    const int received = make(model_.layers[first - 1].activation_elems, compute_, false);
    tensors_[static_cast<std::size_t>(received)].received = true;
    return received;
  }

  /// Elements of a linear layer's weight matrix: from its FLOPs, so that a tied LM head (whose
  /// weight is the embedding's) has one too: flops/2 = in_features x out_features x tokens,
  /// input = in_features x tokens, output = out_features x tokens.
  double linear_weight(const Layer& l, double in_elems) const
  {
    const double macs = l.fwd_flops / 2;
    return in_elems > 0 && l.activation_elems > 0 ? macs * macs / (in_elems * l.activation_elems)
                                                  : static_cast<double>(l.params());
  }

  int forward(const Layer& l, int in, std::vector<int>& pending)
  {
    const Tensor x = tensors_[static_cast<std::size_t>(in)];
    const double n = l.activation_elems;
    if (l.kind == "conv" || l.kind == "linear") {
      // derivatives.yaml convolution: input, weight; addmm / mm: mat1 (the input), mat2 (the weight).
      // Autocast runs both in fp16 and casts an fp32 input to a new fp16 tensor, which is what
      // they keep; the weights' fp16 copies are cached and kept too (counted as weight casts).
      // A column-parallel DTensor linear under sequence parallelism reads (and keeps) the whole
      // input gathered over the tensor ranks (AutogradSettings::dtensor_tp).
      const bool gathers = l.kind == "linear" && s_.dtensor_tp && s_.sequence_parallel && s_.tensor_parallel > 1 && !x.sharded;
      const int read = gathers ? gathered(in) : in;
      const int used = amp_ && x.dtype == 4 ? make(x.elems, 2, x.sharded) : read;
      if (gathers)
        tensors_[static_cast<std::size_t>(used)].whole = true;
      save(used);
      if (amp_) {  // its own parameters, or the tied weight it multiplies by (a bias of its own left out)
        const double own = static_cast<double>(l.params());
        casts_ += 2 * (l.kind == "conv" ? own : std::max(own, linear_weight(l, x.elems)));
      }
      // Megatron's column-parallel linear shards its output, the row-parallel one that follows it
      // reads the shard and gives a whole (reduced) output (Shoeybi et al. 2019, section 3).
      const int out = make(n, compute_, l.kind == "linear" ? !x.sharded : false);
      // torchtitan's op-level checkpointing counts the matmuls of a transformer layer and saves the
      // odd ones' outputs (the 1st, 3rd, ...).
      if (l.kind == "linear") {
        mm_in_block_ = l.block == mm_block_ ? mm_in_block_ + 1 : 1;
        mm_block_ = l.block;
        tensors_[static_cast<std::size_t>(out)].op_saved = mm_in_block_ % 2 == 1;
      }
      return out;
    }
    if (l.kind == "bn") {
      // derivatives.yaml native_batch_norm / cudnn_batch_norm: input, weight, running stats,
      // save_mean, save_invstd (2 x C floats, not counted); runs in the input's dtype.
      save(in);
      return make(n, x.dtype, false);
    }
    if (l.kind == "layernorm") {
      // derivatives.yaml native_layer_norm: input, weight, bias, mean, rstd (2 floats per token, not
      // counted). layer_norm is on autocast's fp32 list: a half input is cast to a new fp32 tensor.
      const int used = amp_ && x.dtype == 2 ? make(x.elems, 4, x.sharded) : in;
      save(used);
      return make(n, stream_, false);
    }
    if (l.kind == "embedding") {
      // derivatives.yaml embedding: indices only (the token ids, counted with the batch). Not on an
      // autocast list: the output has the weight's dtype.
      return make(n, stream_, false);
    }
    if (l.kind == "pool") {
      save(in);
      if (l.op != "avg")  // derivatives.yaml max_pool2d_with_indices: self, result1 (int64 indices)
        keep(n, 8, false);
      // _adaptive_avg_pool2d / avg_pool2d: self
      return make(n, x.dtype, false);
    }
    if (l.kind == "attention")
      return attention(l, in, pending);
    // "activation": ReLU out of place, derivatives.yaml threshold / relu: result
    return keep(n, x.dtype, false);
  }

  /// Tensor `in` all-gathered over the tensor ranks: one gather per module, shared by the linears
  /// that read `in` (q, k and v; gate and up), or one per linear (AutogradSettings::gather_per_linear).
  int gathered(int in)
  {
    if (!s_.gather_per_linear)
      if (const auto it = gathered_of_.find(in); it != gathered_of_.end())
        return it->second;
    const Tensor x = tensors_[static_cast<std::size_t>(in)];
    const int id = make(x.elems, x.dtype, false);
    tensors_[static_cast<std::size_t>(id)].whole = true;
    gathered_of_[in] = id;
    return id;
  }

  int attention(const Layer& l, int in, std::vector<int>& pending)
  {
    // Q, K and V: the fused projection's output (its views), or the separate projections' outputs
    // (pending). Both SDPA (derivatives.yaml _scaled_dot_product_flash_attention /
    // _efficient_attention: query, key, value, output, logsumexp) and eager (matmul: both operands)
    // keep them; Megatron's selective recomputation keeps them as the recomputed core's inputs.
    save(in);
    for (int id : pending)
      save(id);
    pending.clear();
    const Tensor x = tensors_[static_cast<std::size_t>(in)];
    const auto arch = [&](const char* key, double fallback) {
      const auto it = model_.arch.find(key);
      return it != model_.arch.end() ? it->second : fallback;
    };
    const double seq = arch("seq_len", 1), heads = arch("heads", 1);
    const double n = l.activation_elems;
    const double scores = heads * seq * seq;  // per sample
    if (s_.selective_recompute)
      return make(n, compute_, x.sharded);
    if (s_.attention == AttentionKernel::Sdpa) {
      // logsumexp (fp32, one per query row and head) and the output, which the backward kernel
      // reads; both outputs of the SDPA kernel, which op-level checkpointing saves
      const int lse = make(heads * seq, 4, true);
      const int out = make(n, compute_, true);
      tensors_[static_cast<std::size_t>(lse)].op_saved = tensors_[static_cast<std::size_t>(out)].op_saved = true;
      save(lse);
      save(out);
      return out;
    }
    // Eager (transformers' eager_attention_forward): scores = QK^T (and + mask: not kept),
    // softmax keeps its result (derivatives.yaml _softmax: result), in fp32 under autocast (fp32
    // list); dropout keeps its bool mask (native_dropout: result1); the probabilities that multiply
    // V are kept in fp16 (matmul's operand: GPT-2's .to(query.dtype), BERT's autocast cast).
    // Korthikanti et al. 2022's 5as^2b for pure half: softmax 2 + mask 1 + dropout output 2.
    make(scores, compute_, true);  // QK^T, freed after the softmax
    const double softmax = amp_ ? 4 : compute_;
    keep(scores, softmax, true);
    if (dropout_)
      keep(scores, 1, true);
    if (dropout_ || softmax != compute_)
      keep(scores, compute_, true);
    return make(n, compute_, true);
  }

  int then(const std::string& op, int cur, std::vector<int>& pending)
  {
    const Tensor c = tensors_[static_cast<std::size_t>(cur)];
    if (op == "relu_") {  // derivatives.yaml relu_ / threshold_: result (in place: the same tensor)
      save(cur);
      return cur;
    }
    if (op == "relu" || op == "tanh")  // derivatives.yaml relu, tanh: result
      return keep(c.elems, c.dtype, c.sharded);
    if (op == "add_") {  // in place, nothing kept; the residual operand is released
      pending.clear();
      return cur;
    }
    if (op == "add") {  // a new tensor, nothing kept; fp16 + fp32 promotes to the stream's fp32
      pending.clear();
      return make(c.elems, stream_, false);
    }
    if (op == "dropout") {  // derivatives.yaml native_dropout: result1, the bool mask
      keep(c.elems, 1, c.sharded);
      return make(c.elems, c.dtype, c.sharded);
    }
    if (op == "gelu" || op == "silu" || (op == "gelu_tanh" && s_.fused_elementwise)) {
      save(cur);  // derivatives.yaml gelu, silu: self (Megatron's bias_gelu: its input)
      const int out = make(c.elems, c.dtype, c.sharded);
      tensors_[static_cast<std::size_t>(out)].fused_silu = op == "silu" && s_.fused_elementwise;
      return out;
    }
    if (op == "gelu_tanh") {
      // transformers/activations.py NewGELUActivation (GPT-2's gelu_new), in Python:
      //   0.5 * x * (1.0 + torch.tanh(sqrt(2 / pi) * (x + 0.044715 * torch.pow(x, 3.0))))
      // pow keeps x (fp32 list: a new fp32 copy under AMP), tanh its result (promoted to fp32),
      // the final mul both operands: 0.5 * x and 1 + tanh(...).
      keep(c.elems, amp_ ? 4 : c.dtype, c.sharded);
      const double t = amp_ ? 4 : c.dtype;
      keep(c.elems, t, c.sharded);
      keep(c.elems, t, c.sharded);
      keep(c.elems, c.dtype, c.sharded);
      return make(c.elems, std::max(t, c.dtype), c.sharded);
    }
    if (op == "mul") {  // derivatives.yaml mul.Tensor: self and other (SwiGLU: silu(gate) x up)
      // Megatron's fused SwiGLU (AutogradSettings::fused_elementwise) keeps the gate, not silu's output.
      const auto operand = [&](int id) {
        if (!tensors_[static_cast<std::size_t>(id)].fused_silu)
          save(id);
      };
      operand(cur);
      if (!pending.empty()) {
        operand(pending.back());
        pending.pop_back();
      }
      return make(c.elems, c.dtype, c.sharded);
    }
    return cur;
  }

  /// Cross-entropy over each logits tensor: the HF loss and Megatron's take it in fp32 (logits.float(),
  /// or autocast's fp32 list); log_softmax keeps its fp32 result (derivatives.yaml _log_softmax:
  /// result), nll_loss the targets only. Backward holds nll_loss's fp32 gradient and log_softmax's at
  /// once (2 x 4 B per logit), measured as such (calibration/measured/h200-1gpu-2026-11-27: GPT-2's
  /// backward peak is the forward's end plus twice its fp32 logits). A loss on the half-precision
  /// logits as they are (loss_bytes 2) keeps and passes them in that dtype, without the fp32 copy.
  /// Without loss parallelism the loss sees each tensor rank's logits gathered whole. A fused kernel
  /// (fused_loss) keeps what it reads (the logits, or their copy in the loss's dtype) instead of a
  /// log_softmax result, and its backward holds one gradient of that. Megatron's vocabulary-parallel
  /// loss (megatron_loss) keeps its fp32 softmax, made in place over the fp32 copy, and its backward
  /// turns that into the gradient in place (calculate_gradients: grad_input.mul_), so it holds only the
  /// gradient autograd casts back to the logits' dtype (torch/csrc/autograd/engine.cpp
  /// validate_outputs), nothing where the logits are fp32 already.
  void loss(const std::vector<int>& logits)
  {
    pass_.has_loss = true;
    const double lb = s_.loss_bytes;
    for (int id : logits) {
      const Tensor& t = tensors_[static_cast<std::size_t>(id)];
      const bool gathered = !s_.loss_parallel && (t.sharded || s_.sequence_parallel) && s_.tensor_parallel > 1;
      const double seen = gathered ? t.elems * t.dtype : bytes(id);  // the logits the loss reads
      const double own = seen * lb / t.dtype;                         // in the loss's dtype
      pass_.loss_logits += seen;
      if (s_.fused_loss) {
        // The kernel keeps its input: the logits themselves, or a tensor of the loss's own (their
        // copy in its dtype, their gather), after which the rank's logits are free.
        const bool copy = t.dtype != lb || gathered;
        pass_.loss_saved += copy || !t.saved ? own : 0;
        pass_.loss_saved_logits += !copy && !t.saved ? own : 0;
        pass_.loss_fwd_transient += copy && !t.saved ? bytes(id) : 0;
        pass_.loss_bwd_transient += own;
        continue;
      }
      pass_.loss_saved += own;
      pass_.loss_fwd_transient += (t.saved ? 0 : seen) + (t.dtype == lb ? 0 : own);
      if (s_.dtensor_tp && s_.loss_parallel && s_.tensor_parallel > 1) {
        // DTensor's loss parallel (torch/distributed/tensor/parallel/loss.py) in fp32 (its
        // computation dtype): _log_softmax casts its input (a new tensor unless the logits are fp32
        // already), then holds x - max and exp(x - max), or x - max and the result, at once; the
        // fused nll/log_softmax backward holds zeros_like(x), exp(x), their sum and its product with
        // the loss's gradient, three of them at once beside the saved result.
        const double fp32 = seen * 4 / t.dtype;
        pass_.loss_fwd_transient += (lb == 4 ? 0 : fp32) + 2 * fp32;
        pass_.loss_bwd_transient += 3 * own;
        continue;
      }
      if (s_.megatron_loss) {  // AutogradSettings::megatron_loss: the gradient in the logits' dtype
        pass_.loss_bwd_transient += t.dtype == lb ? 0 : seen;
        continue;
      }
      pass_.loss_bwd_transient += 2 * own;
    }
  }

  const Model& model_;
  const AutogradSettings& s_;
  ActivationPass& pass_;
  std::vector<Tensor> tensors_;
  std::vector<int> made_;  // tensors made by the current layer
  std::map<int, int> gathered_of_;  // a tensor's all-gathered copy (dtensor_tp)
  std::size_t layer_ = 0;
  double casts_ = 0;
  std::string mm_block_;    // the block of the last linear layer, and its matmuls so far (op-level checkpointing)
  int mm_in_block_ = 0;
  bool amp_ = false, dropout_ = false;
  double compute_ = 4, stream_ = 4;
};

}  // namespace

double ActivationPass::saved_total() const
{
  double total = loss_saved;
  for (const auto& t : saved)
    total += t.bytes;
  return total;
}

ActivationPass activation_pass(const Model& model, std::size_t first, std::size_t last, const AutogradSettings& s,
                               bool with_loss)
{
  ActivationPass pass;
  pass.first = first;
  pass.last = last;
  Walk walk(model, s, pass);
  walk.run(first, last, with_loss);
  return pass;
}

}  // namespace dtsim
