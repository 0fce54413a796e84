// Transformers from their hyperparameters (sim/model/transformer_family.cpp) against the layer tables
// models/generate/transformer_models.py writes for the shipped models: one set of formulas, in
// two languages, compared layer by layer. Then closed forms (GQA, SwiGLU, tied heads).
#include "sim/model/model.hpp"
#include "sim/model/transformer_family.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace dtsim;
using nlohmann::json;

namespace {

TransformerSpec spec(TransformerFamily family, std::int64_t hidden, std::int64_t layers, std::int64_t heads,
                     std::int64_t seq_len, std::int64_t vocab, std::int64_t kv_heads = 0, std::int64_t ffn = 0,
                     bool tied = true)
{
  TransformerSpec s;
  s.family = family;
  s.hidden = hidden;
  s.layers = layers;
  s.heads = heads;
  s.seq_len = seq_len;
  s.vocab = vocab;
  s.kv_heads = kv_heads;
  s.ffn = ffn;
  s.tied_embeddings = tied;
  return s;
}

void check_same_table(const std::string& shipped_name, const TransformerSpec& s)
{
  CAPTURE(shipped_name);
  const Model shipped = load_model(shipped_name);
  const Model built = build_transformer(s);
  CHECK(built.input_elems == shipped.input_elems);
  CHECK(built.arch == shipped.arch);
  REQUIRE(built.layers.size() == shipped.layers.size());
  for (std::size_t i = 0; i < built.layers.size(); ++i) {
    const Layer& a = built.layers[i];
    const Layer& b = shipped.layers[i];
    CAPTURE(b.name);
    CHECK(a.name == b.name);
    CHECK(a.kind == b.kind);
    CHECK(a.param_tensors == b.param_tensors);
    CHECK(a.fwd_flops == b.fwd_flops);
    CHECK(a.activation_elems == b.activation_elems);
    CHECK(a.buffer_elems == b.buffer_elems);
    CHECK(a.block == b.block);
  }
  CHECK(built.params() == shipped.params());
  CHECK(built.fwd_flops() == shipped.fwd_flops());
}

const Layer& layer_named(const Model& m, const std::string& name)
{
  for (const auto& layer : m.layers)
    if (layer.name == name)
      return layer;
  FAIL("no layer " << name);
  return m.layers.front();
}

}  // namespace

TEST_CASE("the C++ builder writes the shipped tables of the Python generator, layer by layer")
{
  using F = TransformerFamily;
  // The hyperparameters as their sources give them (see each model's "source").
  check_same_table("gpt2", spec(F::Gpt, 768, 12, 12, 1024, 50257));
  check_same_table("gpt2-xl", spec(F::Gpt, 1600, 48, 25, 1024, 50257));
  check_same_table("bert-large", spec(F::Bert, 1024, 24, 16, 512, 30522, 0, 4096));
  check_same_table("gpt3-175b", spec(F::Gpt, 12288, 96, 96, 2048, 50257));
  // Brown et al. 2020, Table 2.1 (1.3B with 16 heads, 13B with d_model 5120: see their sources).
  check_same_table("gpt3-125m", spec(F::Gpt, 768, 12, 12, 2048, 50257));
  check_same_table("gpt3-350m", spec(F::Gpt, 1024, 24, 16, 2048, 50257));
  check_same_table("gpt3-760m", spec(F::Gpt, 1536, 24, 16, 2048, 50257));
  check_same_table("gpt3-1.3b", spec(F::Gpt, 2048, 24, 16, 2048, 50257));
  check_same_table("gpt3-2.7b", spec(F::Gpt, 2560, 32, 32, 2048, 50257));
  check_same_table("gpt3-6.7b", spec(F::Gpt, 4096, 32, 32, 2048, 50257));
  check_same_table("gpt3-13b", spec(F::Gpt, 5120, 40, 40, 2048, 50257));
  // Llama 3 (arXiv 2407.21783, Table 3): 8 KV heads, untied head.
  check_same_table("llama3-8b", spec(F::Llama, 4096, 32, 32, 8192, 128256, 8, 14336, false));
  check_same_table("llama3-70b", spec(F::Llama, 8192, 80, 64, 8192, 128256, 8, 28672, false));
  check_same_table("llama3-405b", spec(F::Llama, 16384, 126, 128, 8192, 128256, 8, 53248, false));
  // MPT (mosaicml/mpt-7b, mpt-30b config.json).
  check_same_table("mpt-7b", spec(F::Mpt, 4096, 32, 32, 2048, 50432));
  check_same_table("mpt-30b", spec(F::Mpt, 7168, 48, 64, 8192, 50432));
}

TEST_CASE("published parameter counts")
{
  // Meta's Llama 3 (Hugging Face meta-llama/Meta-Llama-3-8B and -70B, Llama-3.1-405B safetensors totals).
  CHECK(load_model("llama3-8b").params() == 8'030'261'248);
  CHECK(load_model("llama3-70b").params() == 70'553'706'496);
  CHECK(load_model("llama3-405b").params() == 405'853'388'800);
}

TEST_CASE("closed forms: GQA shrinks K and V, SwiGLU has three matrices, a tied head has no weight")
{
  const double h = 2048, L = 16, A = 32, K = 8, f = 8192, V = 128256, s = 2048;
  const double kv = h / A * K;  // 512
  const Model tied = build_transformer(
      spec(TransformerFamily::Llama, 2048, 16, 32, 2048, 128256, 8, 8192, true));
  // Per layer: two RMSNorms, q and o (h x h), k and v (h x kv), gate, up, down (h x f).
  CHECK(static_cast<double>(tied.params()) == V * h + L * (2 * h + 2 * h * h + 2 * h * kv + 3 * h * f) + h);
  CHECK(tied.fwd_flops() == 2 * s * (L * (2 * h * h + 2 * h * kv + 3 * h * f) + h * V) + 4 * L * s * s * h);
  CHECK(layer_named(tied, "model.layers.3.self_attn.k_proj").activation_elems == s * kv);
  CHECK(layer_named(tied, "model.layers.3.mlp.up_proj").param_tensors == std::vector<std::int64_t>{2048 * 8192});
  CHECK(layer_named(tied, "lm_head").param_tensors.empty());
  CHECK(tied.arch.at("kv_heads") == K);
  CHECK(tied.arch.count("max_positions") == 0);  // rotary: no learned positions

  TransformerSpec untied_spec = spec(TransformerFamily::Llama, 2048, 16, 32, 2048, 128256, 8, 8192, false);
  const Model untied = build_transformer(untied_spec);
  CHECK(untied.params() - tied.params() == 2048 * 128256);
  CHECK(untied.name == "llama-h2048-l16");

  // The attention core is dense (causal masking not halved) and the same under GQA: 4 s^2 h.
  CHECK(layer_named(tied, "model.layers.0.self_attn.core").fwd_flops == 4 * s * s * h);
  const Model mha = build_transformer(spec(TransformerFamily::Llama, 2048, 16, 32, 2048, 128256, 32, 8192, true));
  CHECK(layer_named(mha, "model.layers.0.self_attn.core").fwd_flops == 4 * s * s * h);
  CHECK(layer_named(mha, "model.layers.0.self_attn.v_proj").activation_elems == s * h);

  // GQA in a fused projection (GPT's c_attn, MPT's Wqkv): hidden + 2 x kv outputs.
  const Model mpt = build_transformer(spec(TransformerFamily::Mpt, 2048, 4, 32, 2048, 50432, 8));
  CHECK(layer_named(mpt, "transformer.blocks.0.attn.Wqkv").param_tensors ==
        std::vector<std::int64_t>{2048 * (2048 + 2 * 512)});
  CHECK(layer_named(mpt, "transformer.blocks.0.norm_1").param_tensors == std::vector<std::int64_t>{2048});
  // BERT untied: the decoder has its weight and its bias.
  const Model bert = build_transformer(spec(TransformerFamily::Bert, 256, 2, 4, 128, 1000, 0, 0, false));
  CHECK(layer_named(bert, "cls.predictions.decoder").param_tensors == std::vector<std::int64_t>{256 * 1000, 1000});
  CHECK(layer_named(bert, "bert.encoder.layer.1.intermediate.dense").activation_elems == 128 * 1024);  // ffn 4h

  // Every layer of a built table keeps the model file's rules.
  for (const auto& layer : untied.layers) {
    CHECK(layer.activation_elems > 0);
    CHECK(layer.fwd_flops >= 0);
  }
  for (std::size_t i = 0; i + 1 < untied.layers.size(); ++i)
    if (untied.layers[i].block == "model.layers.5")
      CHECK(untied.cut_allowed_after(i) == (untied.layers[i + 1].block != "model.layers.5"));

  TransformerSpec bad = untied_spec;
  bad.heads = 30;
  CHECK_THROWS_AS(build_transformer(bad), std::invalid_argument);
}

TEST_CASE("an inline model is parsed with its defaults")
{
  const json doc = json::parse(R"({"family": "gpt", "hidden": 512, "layers": 4, "heads": 8, "seq_len": 256, "vocab": 1000})");
  const TransformerSpec s = parse_transformer_spec(JsonReader(doc, "s.json", "/model"));
  CHECK(s.family == TransformerFamily::Gpt);
  CHECK(s.kv_heads == 8);
  CHECK(s.ffn == 2048);
  CHECK(s.tied_embeddings);
  CHECK(s.name == "gpt-h512-l4");
  const json llama = json::parse(R"({"family": "llama", "hidden": 512, "layers": 4, "heads": 8, "seq_len": 256, "vocab": 1000})");
  CHECK_FALSE(parse_transformer_spec(JsonReader(llama, "s.json", "/model")).tied_embeddings);
  for (const auto& name : family_names()) {
    json d = doc;
    d["family"] = name;
    CHECK(family_name(parse_transformer_spec(JsonReader(d, "s.json", "/model")).family) == name);
  }
}
