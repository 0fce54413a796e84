// A DNN as data: its layers in forward (registration) order, each with parameters, forward FLOPs
// and activation size per sample. Loaded from models/NAME.json.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtsim {

struct Layer {
  std::string name;                          ///< e.g. "layer4.2.conv3"
  std::string kind;                          ///< e.g. "conv", "bn", "linear", "attention"
  std::vector<std::int64_t> param_tensors;   ///< element counts of its parameter tensors, in registration order
  double fwd_flops = 0;                      ///< forward FLOPs per sample (2 per multiply-accumulate)
  double activation_elems = 0;               ///< output elements per sample (what a pipeline stage sends on)
  std::int64_t buffer_elems = 0;             ///< buffers (BatchNorm running stats), broadcast by DDP every forward
  /// Layers sharing a block (a residual block, a transformer layer, summed embeddings) must stay on
  /// one pipeline stage: a cut is valid only after a block's last layer, whose activation_elems is
  /// what crosses it. Equals `name` when the layer is a block of its own. Blocks are contiguous.
  std::string block;
  /// Parameter-free operations its output goes through before the next layer, in order ("relu_",
  /// "add", "dropout", "gelu_tanh", "rotary" (rotary position embedding of a query or key
  /// projection, Su et al. 2021), ...: kLayerThenOps); what autograd saves for them is
  /// sim/strategies/saved_tensors.cpp's. Empty when none.
  std::vector<std::string> then;
  /// The layer whose output this one reads; "" = the layer before it (the model's input for the first).
  std::string input;
  /// A pooling layer's operation: "max" or "avg" ("" for other kinds: "max"); a layernorm's "rms"
  /// when it is an RMSNorm (Zhang & Sennrich 2019: no mean, no bias), which runs other kernels.
  std::string op;

  std::int64_t params() const;
};

struct Model {
  std::string name;
  std::string source;                        ///< where the numbers come from
  double input_elems = 0;                    ///< per sample (e.g. 3*224*224)
  std::vector<Layer> layers;
  std::map<std::string, double> arch;        ///< optional architecture facts ("hidden", "seq_len", "classes" ...)

  std::int64_t params() const;
  double fwd_flops() const;                  ///< per sample
  std::int64_t buffer_elems() const;
  std::size_t param_tensor_count() const;
  /// Element counts of all parameter tensors in model.parameters() order (DDP buckets walk this reversed).
  std::vector<std::int64_t> param_tensor_sizes() const;
  /// True when a pipeline cut between layers[i] and layers[i+1] keeps every block on one side.
  bool cut_allowed_after(std::size_t i) const;
};

/// The operations a layer's "then" may name.
extern const std::vector<std::string> kLayerThenOps;

/// Loads models/NAME.json, or a file when `name_or_path` ends in .json. Throws InputError.
/// `origin_file`/`origin_pointer` name where the name was given (for "unknown model" errors).
Model load_model(const std::string& name_or_path, const std::string& origin_file = "",
                 const std::string& origin_pointer = "");

/// The model of a parsed model file (`expected_name`: the name it must have, "" for any).
Model parse_model(const nlohmann::json& doc, const std::string& file, const std::string& expected_name = "");

/// Names of the shipped models.
std::vector<std::string> model_names();

}  // namespace dtsim
