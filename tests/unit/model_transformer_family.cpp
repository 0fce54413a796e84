// Transformers from their hyperparameters (sim/model/transformer_family.cpp) against the layer tables
// models/generate/transformer_models.py writes for the shipped models: one set of formulas, in
// two languages, compared layer by layer. Then closed forms (GQA, SwiGLU, tied heads), the inline
// model of a scenario, and the exact message of every bad inline model in tests/bad_inputs/cases.txt.
#include "sim/model/model.hpp"
#include "sim/model/transformer_family.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace dtsim;
using nlohmann::json;

namespace {

const std::string kRepo = std::string(DTSIM_TESTS_DIR) + "/..";

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
    CHECK(a.then == b.then);
    CHECK(a.input == b.input);
    CHECK(a.op == b.op);
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
  // Korthikanti et al. 2022 (arXiv 2205.05198), Table 3: Megatron-LM's padded vocabulary 51200.
  check_same_table("megatron-gpt-22b", spec(F::Gpt, 6144, 48, 64, 2048, 51200));
  check_same_table("megatron-gpt-175b", spec(F::Gpt, 12288, 96, 96, 2048, 51200));
  check_same_table("megatron-gpt-530b", spec(F::Gpt, 20480, 105, 128, 2048, 51200));
  check_same_table("megatron-gpt-1t", spec(F::Gpt, 25600, 128, 160, 2048, 51200));
}

TEST_CASE("published parameter counts")
{
  // Meta's Llama 3 (Hugging Face meta-llama/Meta-Llama-3-8B and -70B, Llama-3.1-405B safetensors totals).
  CHECK(load_model("llama3-8b").params() == 8'030'261'248);
  CHECK(load_model("llama3-70b").params() == 70'553'706'496);
  CHECK(load_model("llama3-405b").params() == 405'853'388'800);
}

TEST_CASE("MPT as llm-foundry's benchmarks build it: biases and learned positions (NumParams of its tables)")
{
  // mosaicml/llm-foundry scripts/train/benchmarking/README.md, column NumParams: the yamls' models
  // (vocab 50368, tied head) with MPTConfig's defaults no_bias false and learned_pos_emb true; the
  // count grows with seq_len by the wpe table's rows.
  const auto mpt = [](std::int64_t h, std::int64_t layers, std::int64_t heads, std::int64_t seq) {
    TransformerSpec s = spec(TransformerFamily::Mpt, h, layers, heads, seq, 50368);
    s.no_bias = false;
    s.learned_pos_emb = true;
    return build_transformer(s);
  };
  CHECK(mpt(2048, 24, 16, 2048).params() == 1'315'950'592);
  CHECK(mpt(4096, 32, 32, 2048).params() == 6'658'859'008);
  CHECK(mpt(4096, 32, 32, 4096).params() == 6'667'247'616);
  CHECK(mpt(768, 12, 12, 2048).params() == 125'311'488);
  const Model m = mpt(2048, 24, 16, 2048);
  CHECK(layer_named(m, "transformer.wpe").param_tensors == std::vector<std::int64_t>{2048 * 2048});
  CHECK(layer_named(m, "transformer.blocks.0.norm_1").param_tensors == std::vector<std::int64_t>{2048, 2048});
  CHECK(m.arch.at("max_positions") == 2048);
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

TEST_CASE("a scenario's model: a name, or an inline transformer built once parsed; --set reaches its members")
{
  const std::string file = kRepo + "/tests/data/scenarios/inline_llama_ddp.json";
  const Scenario s = load_scenario(file);
  REQUIRE(s.model_spec.has_value());
  CHECK(s.model == "llama3.2-1b");
  CHECK(s.model_spec->kv_heads == 8);
  const Model m = scenario_model(s);
  CHECK(m.name == "llama3.2-1b");
  CHECK(m.params() == 1'235'814'400);  // its config's closed form (the model card's 1.24B; tied embeddings)

  const Scenario wider = load_scenario(file, {parse_override("model.hidden=4096"), parse_override("model.name=null")});
  CHECK(wider.model == "llama-h4096-l16");
  CHECK(scenario_model(wider).arch.at("hidden") == 4096);

  const Scenario named = load_scenario(file, {parse_override("model=gpt2")});
  CHECK_FALSE(named.model_spec.has_value());
  CHECK(scenario_model(named).name == "gpt2");

  try {
    load_scenario(kRepo + "/scenarios/seed-4gpu-ddp.json", {parse_override("model.hidden=4096")});
    FAIL("a member of a named model was set");
  } catch (const InputError& e) {
    CHECK(e.file() == "--set");
    CHECK(e.pointer() == "/model");
    CHECK(e.problem() == "cannot set model.hidden: its parent is the string \"resnet50\", not an object or array");
  }
}

// The exact message of every inline-model case of the bad-input corpus (whose ctest checks the
// contract: exit 2, one line, the file and the pointer). Each case is read from cases.txt and run
// here through the same overrides.
TEST_CASE("bad inline models: the exact message of each case in tests/bad_inputs/cases.txt")
{
  const std::map<std::string, std::string> expected = {
      {"inline_model_family_unknown", "expected one of gpt, llama, mpt, bert, got \"lama\", did you mean \"llama\"?"},
      {"inline_model_family_number", "expected a string, got 1"},
      {"inline_model_heads_not_dividing", "expected a number of heads that divides hidden (2048), got 30"},
      {"inline_model_heads_above_hidden", "expected a number of heads that divides hidden (2048), got 4096"},
      {"inline_model_kv_heads_not_dividing", "expected a number of kv_heads that divides heads (32), got 5"},
      {"inline_model_kv_heads_above_heads", "expected a number of kv_heads that divides heads (32), got 64"},
      {"inline_model_kv_heads_zero", "expected a number of kv_heads from 1 to 1048576, got 0"},
      {"inline_model_hidden_zero", "expected a hidden size from 1 to 1048576, got 0"},
      {"inline_model_hidden_negative", "expected a hidden size from 1 to 1048576, got -2048"},
      {"inline_model_hidden_huge", "expected a hidden size from 1 to 1048576, got 1000000000"},
      {"inline_model_hidden_fraction", "expected an integer, got 2048.5"},
      {"inline_model_hidden_string", "expected an integer, got the string \"2048\""},
      {"inline_model_hidden_bool", "expected an integer, got the boolean true"},
      {"inline_model_layers_zero", "expected a number of layers from 1 to 1024, got 0"},
      {"inline_model_layers_huge", "expected a number of layers from 1 to 1024, got 100000"},
      {"inline_model_layers_over_1024", "expected a number of layers from 1 to 1024, got 1025"},
      {"inline_model_heads_zero", "expected a number of heads from 1 to 1048576, got 0"},
      {"inline_model_seq_len_zero", "expected a sequence length (tokens) from 1 to 16777216, got 0"},
      {"inline_model_seq_len_huge", "expected a sequence length (tokens) from 1 to 16777216, got 1000000000"},
      {"inline_model_vocab_negative", "expected a vocabulary size from 1 to 16777216, got -1"},
      {"inline_model_ffn_zero", "expected an FFN size from 1 to 4194304, got 0"},
      {"inline_model_ffn_huge", "expected an FFN size from 1 to 4194304, got 1000000000"},
      {"inline_model_tied_string", "expected true or false, got the string \"yes\""},
      {"inline_model_no_bias_not_mpt",
       "expected no_bias only with family mpt (llm-foundry's MPTConfig), not with family llama"},
      {"inline_model_learned_pos_emb_not_mpt",
       "expected learned_pos_emb only with family mpt (llm-foundry's MPTConfig), not with family llama"},
      {"inline_model_no_bias_string", "expected true or false, got the string \"no\""},
      {"inline_model_name_empty", "expected a non-empty string"},
      {"inline_model_name_number", "expected a string, got 5"},
      {"inline_model_unknown_member",
       "unknown member \"hiden\", did you mean \"hidden\"? (expected one of family, name, hidden, layers, heads, "
       "kv_heads, seq_len, vocab, ffn, tied_embeddings, no_bias, learned_pos_emb)"},
      {"inline_model_missing_vocab", "missing member \"vocab\""},
      {"inline_model_missing_family", "missing member \"family\""},
      {"inline_model_array",
       "expected a model name, a .json model file or a model object {\"family\": ..., \"hidden\": ..., \"layers\": "
       "..., \"heads\": ..., \"seq_len\": ..., \"vocab\": ...}, got an array"},
      {"inline_model_tensor_too_large",
       "expected sizes whose parameter tensors have at most 1e12 elements (a model file's bound), got 1099511627776 "
       "elements in model.embed_tokens"},
      {"inline_model_flops_too_large",
       "expected sizes whose layers do at most 1e18 forward FLOPs per sample (a model file's bound), got 2.31e+18 in "
       "model.layers.0.self_attn.core"},
      {"set_inline_model_member_of_named_model",
       "cannot set model.hidden: its parent is the string \"resnet50\", not an object or array"},
  };
  std::ifstream cases(kRepo + "/tests/bad_inputs/cases.txt");
  REQUIRE(cases.good());
  std::string line;
  int seen = 0;
  while (std::getline(cases, line)) {
    // NAME | FILE | POINTER | ARGS, as tests/bad_inputs/CMakeLists.txt reads it.
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t bar; (bar = line.find(" | ", start)) != std::string::npos && fields.size() < 3; start = bar + 3)
      fields.push_back(line.substr(start, bar - start));
    fields.push_back(line.substr(start));
    if (fields.size() != 4 || fields[0].find("inline_model") == std::string::npos)
      continue;
    ++seen;
    const std::string& name = fields[0];
    CAPTURE(name);
    const auto want = expected.find(name);
    REQUIRE_MESSAGE(want != expected.end(), "no expected message for case " << name);
    std::istringstream args(fields[3]);
    std::string verb, scenario, flag, value;
    args >> verb >> scenario;
    REQUIRE(verb == "run");
    std::vector<Override> overrides;
    while (args >> flag >> value) {
      REQUIRE(flag == "--set");
      overrides.push_back(parse_override(value));
    }
    try {
      const Scenario s = load_scenario(kRepo + "/" + scenario, overrides);
      (void)scenario_model(s);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.problem() == want->second);
      const std::string& file = fields[1];
      CHECK(e.file().size() >= file.size());
      CHECK(e.file().compare(e.file().size() - file.size(), file.size(), file) == 0);
      if (fields[2] != "-")
        CHECK(e.pointer() == fields[2]);
    }
  }
  CHECK(seen == static_cast<int>(expected.size()));
}
