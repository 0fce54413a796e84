// Transformer layer tables from hyperparameters: the formulas of models/generate/transformer_models.py
// (its gpt, bert, llama and mpt functions), row for row. Conventions (layer_table.py): layers in
// forward order, Hugging Face module names, params = element counts of the module's tensors,
// fwd_flops = 2 x multiply-accumulates per sample (one sequence of seq_len tokens), activation_elems =
// output elements per sample, block = the layers that stay on one pipeline stage.
#include "sim/model/transformer_family.hpp"

#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace dtsim {

namespace {

// Bounds on each hyperparameter: far beyond any real model, low enough that every product below
// stays exact in int64 (a weight of hidden x vocab is at most 2^44 elements).
/// 2^20: 40 x the widest dense model published, 25,600 (Megatron-LM's 1T GPT, Narayanan et al.
/// 2021, arXiv 2104.04473, Table 1).
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
/// 8 x the deepest published models, 126-128 layers (Llama 3 405B, Megatron's 1T). Every layer is
/// tasks of every simulated rank: DDP of 3,000 Llama layers on 64 GPUs took 23 s and 7.3 GB, of
/// 10,000 over 120 s (a layer table's 100,000 rows, model_loader.cpp, hold far smaller layers).
constexpr std::int64_t kMaxLayers = 1'024;
/// 2^24 tokens: beyond the 10M-token contexts reported (Gemini 1.5, arXiv 2403.05530).
constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 24;
/// 2^24: 65 x the largest vocabularies published, 256,000 (PaLM, Chowdhery et al. 2022, arXiv 2204.02311).
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
/// 4 x kMaxHidden: the FFN's usual ratio (Vaswani et al. 2017) at the widest hidden allowed.
constexpr std::int64_t kMaxFfn = 4 * kMaxHidden;
/// A model file's bounds (model_loader.cpp: one parameter tensor; json_reader.hpp's
/// kMaxJsonMagnitude for any number, a layer's FLOPs included): a built table keeps within them.
constexpr double kMaxTensorElems = 1e12;
constexpr double kMaxLayerFlops = kMaxJsonMagnitude;

/// Builds a Model row by row, as layer_table.py's LayerTable does.
class TableBuilder {
public:
  explicit TableBuilder(Model& model) : model_(model) {}

  void begin_block(std::string block) { block_ = std::move(block); }
  void end_block() { block_.clear(); }

  void add(std::string name, const char* kind, std::vector<std::int64_t> params, double fwd_macs,
           double activation_elems)
  {
    Layer layer;
    layer.block = block_.empty() ? name : block_;
    layer.name = std::move(name);
    layer.kind = kind;
    layer.param_tensors = std::move(params);
    layer.fwd_flops = 2 * fwd_macs;
    layer.activation_elems = activation_elems;
    model_.layers.push_back(std::move(layer));
  }
  /// The last layer's output goes through `ops` (Layer::then), as layer_table.py's `then=`.
  void then(std::vector<std::string> ops) { model_.layers.back().then = std::move(ops); }
  /// The last layer reads `layer`'s output (Layer::input), as layer_table.py's `input=`.
  void input(std::string layer) { model_.layers.back().input = std::move(layer); }
  const std::string& last_name() const { return model_.layers.back().name; }

  void linear(std::string name, std::int64_t fan_in, std::int64_t fan_out, std::int64_t tokens, bool bias = true)
  {
    std::vector<std::int64_t> params{fan_in * fan_out};
    if (bias)
      params.push_back(fan_out);
    add(std::move(name), "linear", std::move(params), static_cast<double>(fan_in * fan_out) * static_cast<double>(tokens),
        static_cast<double>(fan_out) * static_cast<double>(tokens));
  }
  void layernorm(std::string name, std::int64_t hidden, std::int64_t tokens, bool bias = true)
  {
    std::vector<std::int64_t> params{hidden};
    if (bias)
      params.push_back(hidden);
    add(std::move(name), "layernorm", std::move(params), 0, static_cast<double>(hidden) * static_cast<double>(tokens));
  }
  /// RMSNorm (Zhang & Sennrich 2019): one weight; kind "layernorm" with op "rms" (its memory is a
  /// LayerNorm's; its eager kernels are not, sim/strategies/roofline.cpp).
  void rmsnorm(std::string name, std::int64_t hidden, std::int64_t tokens)
  {
    layernorm(std::move(name), hidden, tokens, false);
    model_.layers.back().op = "rms";
  }
  void embedding(std::string name, std::int64_t rows, std::int64_t hidden, std::int64_t tokens)
  {
    add(std::move(name), "embedding", {rows * hidden}, 0, static_cast<double>(hidden) * static_cast<double>(tokens));
  }
  /// QK^T and attention x V, seq x seq x hidden multiply-accumulates each, counted dense: a causal
  /// mask does not halve them, as Megatron-LM counts them (Narayanan et al. 2021, arXiv
  /// 2104.04473, the FLOP count 96 B s l h^2 (1 + s/6h + V/16lh) of its appendix; Korthikanti et
  /// al. 2022, arXiv 2205.05198, Appendix A, 72 B s l h^2 (1 + s/6h + V/12hl): the s/6h term is
  /// these products over every query-key pair). GQA does not change them: every query head still
  /// scores every position. No parameters.
  void attention_core(std::string name, std::int64_t hidden, std::int64_t seq)
  {
    const double s = static_cast<double>(seq), h = static_cast<double>(hidden);
    add(std::move(name), "attention", {}, 2 * s * s * h, s * h);
  }
  /// The LM head's product over every token; its weight is the word embedding's when tied.
  void lm_head(std::string name, std::int64_t hidden, std::int64_t vocab, std::int64_t seq, bool tied)
  {
    std::vector<std::int64_t> params;
    if (!tied)
      params.push_back(vocab * hidden);
    add(std::move(name), "linear", std::move(params), static_cast<double>(hidden * vocab) * static_cast<double>(seq),
        static_cast<double>(vocab) * static_cast<double>(seq));
  }

private:
  Model& model_;
  std::string block_;
};

// The four families, as transformer_models.py's gpt(), bert(), llama() and mpt().
void gpt_layers(TableBuilder& t, const TransformerSpec& m, std::int64_t kv_width)
{
  const std::int64_t h = m.hidden, s = m.seq_len;
  t.begin_block("transformer.embeddings");
  t.embedding("transformer.wte", m.vocab, h, s);
  t.embedding("transformer.wpe", s, h, s);  // learned positions, seq_len of them
  t.then({"add", "dropout"});               // drop(wte + wpe)
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string p = fmt::format("transformer.h.{}", i);
    t.begin_block(p);
    t.layernorm(p + ".ln_1", h, s);
    t.linear(p + ".attn.c_attn", h, h + 2 * kv_width, s);
    t.attention_core(p + ".attn.core", h, s);
    t.linear(p + ".attn.c_proj", h, h, s);
    t.then({"dropout", "add"});
    t.layernorm(p + ".ln_2", h, s);
    t.linear(p + ".mlp.c_fc", h, m.ffn, s);
    t.then({"gelu_tanh"});  // Hugging Face's gelu_new
    t.linear(p + ".mlp.c_proj", m.ffn, h, s);
    t.then({"dropout", "add"});
  }
  t.end_block();
  t.layernorm("transformer.ln_f", h, s);
  t.lm_head("lm_head", h, m.vocab, s, m.tied_embeddings);
}

void bert_layers(TableBuilder& t, const TransformerSpec& m, std::int64_t kv_width)
{
  const std::int64_t h = m.hidden, s = m.seq_len, V = m.vocab;
  t.begin_block("bert.embeddings");
  t.embedding("bert.embeddings.word_embeddings", V, h, s);
  t.embedding("bert.embeddings.position_embeddings", s, h, s);  // learned positions, seq_len of them
  t.then({"add"});
  // type_vocab_size 2 (Hugging Face BertConfig; sentence A and B of Devlin et al. 2019)
  t.embedding("bert.embeddings.token_type_embeddings", 2, h, s);
  t.then({"add"});
  t.layernorm("bert.embeddings.LayerNorm", h, s);
  t.then({"dropout"});
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string p = fmt::format("bert.encoder.layer.{}", i);
    t.begin_block(p);
    const std::string layer_input = t.last_name();
    t.linear(p + ".attention.self.query", h, h, s);
    t.linear(p + ".attention.self.key", h, kv_width, s);
    t.input(layer_input);
    t.linear(p + ".attention.self.value", h, kv_width, s);
    t.input(layer_input);
    t.attention_core(p + ".attention.self.core", h, s);
    t.linear(p + ".attention.output.dense", h, h, s);
    t.then({"dropout", "add"});
    t.layernorm(p + ".attention.output.LayerNorm", h, s);
    t.linear(p + ".intermediate.dense", h, m.ffn, s);
    t.then({"gelu"});
    t.linear(p + ".output.dense", m.ffn, h, s);
    t.then({"dropout", "add"});
    t.layernorm(p + ".output.LayerNorm", h, s);
  }
  const std::string encoder_output = t.last_name();
  t.begin_block("heads");
  t.linear("bert.pooler.dense", h, h, 1);  // on the [CLS] token only
  t.then({"tanh"});
  t.linear("cls.predictions.transform.dense", h, h, s);
  t.then({"gelu"});
  t.input(encoder_output);
  t.layernorm("cls.predictions.transform.LayerNorm", h, s);
  std::vector<std::int64_t> decoder;
  if (!m.tied_embeddings)
    decoder.push_back(h * V);
  decoder.push_back(V);  // the decoder's bias
  t.add("cls.predictions.decoder", "linear", std::move(decoder), static_cast<double>(h * V) * static_cast<double>(s),
        static_cast<double>(V) * static_cast<double>(s));
  t.linear("cls.seq_relationship", h, 2, 1);  // next-sentence prediction on [CLS]
  t.input("bert.pooler.dense");
  t.end_block();
}

void llama_layers(TableBuilder& t, const TransformerSpec& m, std::int64_t kv_width)
{
  const std::int64_t h = m.hidden, s = m.seq_len;
  t.embedding("model.embed_tokens", m.vocab, h, s);  // rotary positions: no parameters
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string p = fmt::format("model.layers.{}", i);
    t.begin_block(p);
    t.rmsnorm(p + ".input_layernorm", h, s);
    std::string norm = t.last_name();
    t.linear(p + ".self_attn.q_proj", h, h, s, false);
    t.then({"rotary"});  // rotary positions (Su et al. 2021) on the queries and the keys
    t.linear(p + ".self_attn.k_proj", h, kv_width, s, false);
    t.then({"rotary"});
    t.input(norm);
    t.linear(p + ".self_attn.v_proj", h, kv_width, s, false);
    t.input(norm);
    t.attention_core(p + ".self_attn.core", h, s);
    t.linear(p + ".self_attn.o_proj", h, h, s, false);
    t.then({"add"});
    t.rmsnorm(p + ".post_attention_layernorm", h, s);
    norm = t.last_name();
    // SwiGLU (Shazeer 2020): down(silu(gate(x)) * up(x)), three matrices of the inner size ffn.
    t.linear(p + ".mlp.gate_proj", h, m.ffn, s, false);
    t.then({"silu"});
    t.linear(p + ".mlp.up_proj", h, m.ffn, s, false);
    t.then({"mul"});
    t.input(norm);
    t.linear(p + ".mlp.down_proj", m.ffn, h, s, false);
    t.then({"add"});
  }
  t.end_block();
  t.rmsnorm("model.norm", h, s);
  t.lm_head("lm_head", h, m.vocab, s, m.tied_embeddings);
}

void mpt_layers(TableBuilder& t, const TransformerSpec& m, std::int64_t kv_width)
{
  // llm-foundry's MPTModel: wpe only with learned_pos_emb (else ALiBi); no_bias removes every bias,
  // the LayerNorms' too. Its dropouts default to p = 0 (resid_pdrop, emb_pdrop), which F.dropout
  // returns as its input (ATen's _dropout: p == 0), so none is listed.
  const std::int64_t h = m.hidden, s = m.seq_len;
  const bool bias = !m.no_bias;
  if (m.learned_pos_emb) {
    t.begin_block("transformer.embeddings");
    t.embedding("transformer.wte", m.vocab, h, s);
    t.embedding("transformer.wpe", s, h, s);  // learned positions, seq_len of them
    t.then({"add"});
  } else {
    t.embedding("transformer.wte", m.vocab, h, s);
  }
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const std::string p = fmt::format("transformer.blocks.{}", i);
    t.begin_block(p);
    t.layernorm(p + ".norm_1", h, s, bias);
    t.linear(p + ".attn.Wqkv", h, h + 2 * kv_width, s, bias);
    t.attention_core(p + ".attn.core", h, s);
    t.linear(p + ".attn.out_proj", h, h, s, bias);
    t.then({"add"});
    t.layernorm(p + ".norm_2", h, s, bias);
    t.linear(p + ".ffn.up_proj", h, m.ffn, s, bias);
    t.then({"gelu"});
    t.linear(p + ".ffn.down_proj", m.ffn, h, s, bias);
    t.then({"add"});
  }
  t.end_block();
  t.layernorm("transformer.norm_f", h, s, bias);
  t.lm_head("lm_head", h, m.vocab, s, m.tied_embeddings);
}

std::int64_t read_size(const JsonReader& in, const std::string& key, const char* what, std::int64_t max)
{
  const JsonReader value = in.at(key);
  const std::int64_t n = value.as_int();
  if (n < 1 || n > max)
    value.fail(fmt::format("expected {} from 1 to {}, got {}", what, max, n));
  return n;
}

}  // namespace

const char* family_name(TransformerFamily family)
{
  switch (family) {
    case TransformerFamily::Gpt: return "gpt";
    case TransformerFamily::Llama: return "llama";
    case TransformerFamily::Mpt: return "mpt";
    case TransformerFamily::Bert: return "bert";
  }
  return "gpt";
}

const std::vector<std::string>& family_names()
{
  static const std::vector<std::string> names = {"gpt", "llama", "mpt", "bert"};
  return names;
}

bool family_ties_embeddings(TransformerFamily family)
{
  // Hugging Face configs' tie_word_embeddings: GPT2Config and BertConfig default true, MPT ties
  // (no lm_head unless told), LlamaConfig false (the Llama 3 8B/70B/405B configs).
  return family != TransformerFamily::Llama;
}

std::string default_transformer_name(const TransformerSpec& spec)
{
  return fmt::format("{}-h{}-l{}", family_name(spec.family), spec.hidden, spec.layers);
}

Model build_transformer(const TransformerSpec& spec)
{
  TransformerSpec m = spec;
  if (m.kv_heads == 0)
    m.kv_heads = m.heads;
  if (m.ffn == 0)
    m.ffn = 4 * m.hidden;  // Vaswani et al. 2017, and every family's default here
  if (m.heads <= 0 || m.hidden % m.heads != 0 || m.kv_heads <= 0 || m.heads % m.kv_heads != 0)
    throw std::invalid_argument(fmt::format("transformer spec: {} heads and {} kv_heads do not divide hidden {}",
                                            m.heads, m.kv_heads, m.hidden));
  const std::int64_t kv_width = m.hidden / m.heads * m.kv_heads;  // K's (and V's) output width

  Model model;
  model.name = m.name.empty() ? default_transformer_name(m) : m.name;
  model.source = fmt::format(
      "{} transformer from hyperparameters: hidden {}, {} layers, {} heads, {} KV heads, FFN {}, vocab {}, "
      "seq_len {}, {} embeddings; built by sim/model/transformer_family.cpp with the formulas of "
      "models/generate/transformer_models.py.",
      family_name(m.family), m.hidden, m.layers, m.heads, m.kv_heads, m.ffn, m.vocab, m.seq_len,
      m.tied_embeddings ? "tied" : "untied");
  model.input_elems = static_cast<double>(m.seq_len);
  // transformer_models.py's arch(): max_positions where positions are learned, kv_heads under GQA.
  model.arch = {{"hidden", static_cast<double>(m.hidden)}, {"layers", static_cast<double>(m.layers)},
                {"heads", static_cast<double>(m.heads)},   {"seq_len", static_cast<double>(m.seq_len)},
                {"vocab", static_cast<double>(m.vocab)},   {"ffn", static_cast<double>(m.ffn)}};
  if (m.family == TransformerFamily::Gpt || m.family == TransformerFamily::Bert ||
      (m.family == TransformerFamily::Mpt && m.learned_pos_emb))
    model.arch["max_positions"] = static_cast<double>(m.seq_len);
  if (m.kv_heads != m.heads)
    model.arch["kv_heads"] = static_cast<double>(m.kv_heads);

  TableBuilder t(model);
  switch (m.family) {
    case TransformerFamily::Gpt: gpt_layers(t, m, kv_width); break;
    case TransformerFamily::Bert: bert_layers(t, m, kv_width); break;
    case TransformerFamily::Llama: llama_layers(t, m, kv_width); break;
    case TransformerFamily::Mpt: mpt_layers(t, m, kv_width); break;
  }
  return model;
}

TransformerSpec parse_transformer_spec(const JsonReader& in)
{
  if (!in.is_object())
    in.fail(fmt::format("expected a model object {{\"family\", \"hidden\", \"layers\", \"heads\", \"seq_len\", \"vocab\"}}, got {}",
                        describe_json(in.json())));
  in.reject_unknown({"family", "name", "hidden", "layers", "heads", "kv_heads", "seq_len", "vocab", "ffn",
                     "tied_embeddings", "no_bias", "learned_pos_emb"});
  TransformerSpec spec;
  const std::string family = in.at("family").as_choice(family_names());
  for (std::size_t i = 0; i < family_names().size(); ++i)
    if (family_names()[i] == family)
      spec.family = static_cast<TransformerFamily>(i);
  spec.hidden = read_size(in, "hidden", "a hidden size", kMaxHidden);
  spec.layers = read_size(in, "layers", "a number of layers", kMaxLayers);
  spec.heads = read_size(in, "heads", "a number of heads", kMaxHidden);
  if (spec.hidden % spec.heads != 0)
    in.at("heads").fail(
        fmt::format("expected a number of heads that divides hidden ({}), got {}", spec.hidden, spec.heads));
  spec.kv_heads = in.has("kv_heads") ? read_size(in, "kv_heads", "a number of kv_heads", kMaxHidden) : spec.heads;
  if (spec.heads % spec.kv_heads != 0)
    in.at("kv_heads").fail(
        fmt::format("expected a number of kv_heads that divides heads ({}), got {}", spec.heads, spec.kv_heads));
  spec.seq_len = read_size(in, "seq_len", "a sequence length (tokens)", kMaxSeqLen);
  spec.vocab = read_size(in, "vocab", "a vocabulary size", kMaxVocab);
  spec.ffn = in.has("ffn") ? read_size(in, "ffn", "an FFN size", kMaxFfn) : 4 * spec.hidden;
  spec.tied_embeddings = in.bool_or("tied_embeddings", family_ties_embeddings(spec.family));
  for (const char* key : {"no_bias", "learned_pos_emb"})
    if (in.has(key) && spec.family != TransformerFamily::Mpt)
      in.at(key).fail(fmt::format("expected {} only with family mpt (llm-foundry's MPTConfig), not with family {}", key,
                                  family));
  spec.no_bias = in.bool_or("no_bias", true);
  spec.learned_pos_emb = in.bool_or("learned_pos_emb", false);
  if (const auto name = in.find("name")) {
    spec.name = name->as_string();
    if (spec.name.empty())
      name->fail("expected a non-empty string");
  } else {
    spec.name = default_transformer_name(spec);
  }
  // Each size is within its bound; together they may still make a layer no model file could hold.
  for (const auto& layer : build_transformer(spec).layers) {
    for (const auto elems : layer.param_tensors)
      if (static_cast<double>(elems) > kMaxTensorElems)
        in.fail(fmt::format("expected sizes whose parameter tensors have at most 1e12 elements (a model file's bound), "
                            "got {} elements in {}",
                            elems, layer.name));
    if (layer.fwd_flops > kMaxLayerFlops)
      in.fail(fmt::format("expected sizes whose layers do at most 1e18 forward FLOPs per sample (a model file's "
                          "bound), got {:.3g} in {}",
                          layer.fwd_flops, layer.name));
  }
  return spec;
}

}  // namespace dtsim
