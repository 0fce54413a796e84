// Transformer models from their hyperparameters: a scenario's inline model
// {"family": "gpt" | "llama" | "mpt" | "bert", "hidden": H, "layers": L, "heads": A, "seq_len": S,
//  "vocab": V, optional "kv_heads", "ffn", "tied_embeddings", "name"} becomes the same layer table
// that models/generate/transformer_models.py writes for the shipped models of these families (one
// set of formulas; tests/unit/model_transformer_family.cpp compares the two layer by layer).
#pragma once

#include "sim/model/model.hpp"
#include "sim/util/json_reader.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

/// The architectures a table can be built for (transformer_models.py's gpt, llama, mpt, bert).
enum class TransformerFamily { Gpt, Llama, Mpt, Bert };

/// "gpt", "llama", "mpt", "bert": the names a scenario gives.
const char* family_name(TransformerFamily family);
/// Every family's name, in the enum's order.
const std::vector<std::string>& family_names();

/// A transformer's hyperparameters, with the optional ones resolved to their defaults by
/// parse_transformer_spec (kv_heads = heads, ffn = 4 x hidden, tied_embeddings by family).
struct TransformerSpec {
  TransformerFamily family = TransformerFamily::Gpt;
  std::string name;               ///< the model's name ("" in a spec built by hand: a generated one is used)
  std::int64_t hidden = 0;        ///< model width (d_model)
  std::int64_t layers = 0;        ///< transformer layers
  std::int64_t heads = 0;         ///< attention (query) heads; they divide hidden
  std::int64_t kv_heads = 0;      ///< key/value heads (GQA); they divide heads; 0 in a spec built by hand = heads
  std::int64_t seq_len = 0;       ///< tokens per sample (one sequence)
  std::int64_t vocab = 0;         ///< vocabulary size (rows of the word embedding)
  std::int64_t ffn = 0;           ///< FFN inner size (SwiGLU's for llama); 0 in a spec built by hand = 4 x hidden
  bool tied_embeddings = true;    ///< the LM head (BERT: MLM decoder) shares the word embedding's weight
  /// MPT only (llm-foundry's MPTConfig fields of the same names): no bias in any linear or LayerNorm
  /// (the released MPT-7B and 30B: true), and learned positions (a wpe table of seq_len rows) instead
  /// of ALiBi (the released models: false). llm-foundry's own defaults are the opposite of both.
  bool no_bias = true;
  bool learned_pos_emb = false;
};

/// Whether a family ties its LM head to the word embedding unless told otherwise: GPT-2, MPT and
/// BERT do, Llama does not (Hugging Face configs' tie_word_embeddings).
bool family_ties_embeddings(TransformerFamily family);

/// "gpt-h4096-l32": the name of a model given without one.
std::string default_transformer_name(const TransformerSpec& spec);

/// Reads an inline model object. Throws InputError naming the file, the JSON pointer and what was
/// expected: an unknown family (with did-you-mean), unknown members, wrong types, sizes that are not
/// positive or beyond any real model, heads that do not divide hidden, kv_heads that do not divide
/// heads, and sizes whose layers would break a model file's bounds (a parameter tensor of at most
/// 1e12 elements, forward FLOPs per sample of a layer of at most 1e18).
TransformerSpec parse_transformer_spec(const JsonReader& in);

/// The layer table of a spec that parse_transformer_spec accepted (or one built by hand within the
/// same bounds; throws std::invalid_argument when heads or kv_heads do not divide).
Model build_transformer(const TransformerSpec& spec);

}  // namespace dtsim
