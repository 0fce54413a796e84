// A DNN as data: its layers in forward (registration) order, each with parameters, forward FLOPs
// and activation size per sample. Loaded from models/NAME.json.
#pragma once

#include <cstdint>
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

  std::int64_t params() const;
};

struct Model {
  std::string name;
  std::string source;                        ///< where the numbers come from
  double input_elems = 0;                    ///< per sample (e.g. 3*224*224)
  std::vector<Layer> layers;

  std::int64_t params() const;
  double fwd_flops() const;                  ///< per sample
  std::int64_t buffer_elems() const;
  std::size_t param_tensor_count() const;
};

/// Loads models/NAME.json, or a file when `name_or_path` ends in .json. Throws InputError.
/// `origin_file`/`origin_pointer` name where the name was given (for "unknown model" errors).
Model load_model(const std::string& name_or_path, const std::string& origin_file = "",
                 const std::string& origin_pointer = "");

/// Names of the shipped models.
std::vector<std::string> model_names();

}  // namespace dtsim
