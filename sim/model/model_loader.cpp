// Reads a model's layer table (models/NAME.json, schema in models/generate/README.md) and validates every
// field, so that a bad file fails with its path, the JSON pointer and what was expected.
#include "sim/model/model.hpp"
#include "sim/util/did_you_mean.hpp"

#include "sim/util/data_paths.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace dtsim {

namespace {

const std::vector<std::string> kLayerKinds = {"conv",      "bn",        "linear",   "pool",
                                              "activation", "embedding", "layernorm", "attention"};

std::string non_empty_string(const JsonReader& value)
{
  std::string s = value.as_string();
  if (s.empty())
    value.fail("expected a non-empty string");
  return s;
}

std::int64_t non_negative_int(const JsonReader& value, const char* what)
{
  // 1e12 elements (4 TB in fp32) is beyond any single tensor; the bound keeps sums within int64.
  const std::int64_t v = value.as_int();
  if (v < 0 || v > 1'000'000'000'000)
    value.fail(fmt::format("expected {} >= 0 and at most 1e12, got {}", what, v));
  return v;
}

Layer read_layer(const JsonReader& in)
{
  if (!in.is_object())
    in.fail(fmt::format("expected a layer object, got {}", describe_json(in.json())));
  in.reject_unknown({"name", "kind", "params", "fwd_flops", "activation_elems", "buffer_elems", "block", "then", "input",
                     "op"});
  Layer layer;
  layer.name = non_empty_string(in.at("name"));
  layer.kind = in.at("kind").as_choice(kLayerKinds);
  for (const auto& tensor : in.at("params").items())
    layer.param_tensors.push_back(non_negative_int(tensor, "a parameter tensor size (elements)"));
  layer.fwd_flops = in.at("fwd_flops").as_non_negative();
  layer.activation_elems = in.at("activation_elems").as_positive();
  if (auto buffers = in.find("buffer_elems"))
    layer.buffer_elems = non_negative_int(*buffers, "a buffer size (elements)");
  layer.block = in.has("block") ? non_empty_string(in.at("block")) : layer.name;
  if (auto then = in.find("then"))
    for (const auto& op : then->items())
      layer.then.push_back(op.as_choice(kLayerThenOps));
  if (auto input = in.find("input"))
    layer.input = non_empty_string(*input);
  if (auto op = in.find("op")) {
    layer.op = op->as_choice({"max", "avg", "rms"});
    const char* kind = layer.op == "rms" ? "layernorm" : "pool";
    if (layer.kind != kind)
      op->fail(fmt::format("expected op \"{}\" only on a layer of kind \"{}\", got kind \"{}\"", layer.op, kind,
                           layer.kind));
  }
  return layer;
}

void read_layers(const JsonReader& in, Model& model)
{
  const auto items = in.items();
  if (items.empty())
    in.fail("expected a non-empty array of layers");
  if (items.size() > 100'000)  // the largest published models have a few thousand layers
    in.fail(fmt::format("expected at most 100000 layers, got {}", items.size()));
  std::set<std::string> names;
  std::set<std::string> closed_blocks;  // blocks already left: seeing one again would split it
  for (const auto& item : items) {
    Layer layer = read_layer(item);
    if (!names.insert(layer.name).second)
      item.at("name").fail(fmt::format("duplicate layer name \"{}\" (expected unique names)", layer.name));
    if (!model.layers.empty() && model.layers.back().block != layer.block)
      closed_blocks.insert(model.layers.back().block);
    if (!layer.input.empty() && !names.count(layer.input))
      item.at("input").fail(fmt::format("expected the name of an earlier layer, got \"{}\"", layer.input));
    if (layer.input == layer.name)
      item.at("input").fail(fmt::format("expected the name of an earlier layer, got the layer's own \"{}\"", layer.input));
    if (closed_blocks.count(layer.block))
      item.fail(fmt::format("block \"{}\" is not contiguous (expected the layers of a block next to each other)",
                            layer.block));
    model.layers.push_back(std::move(layer));
  }
  if (model.params() <= 0)
    in.fail("expected at least one parameter tensor with elements (the model has no parameters)");
  if (!(model.fwd_flops() > 0))
    in.fail("expected at least one layer with fwd_flops > 0 (the model does no compute)");
}

}  // namespace

// sim/strategies/saved_tensors.cpp says what autograd saves for each.
const std::vector<std::string> kLayerThenOps = {"relu_", "relu", "add_", "add",  "dropout",
                                                "gelu",  "gelu_tanh", "silu", "mul", "tanh", "rotary"};

Model parse_model(const nlohmann::json& doc, const std::string& file, const std::string& expected_name)
{
  const JsonReader root(doc, file);
  if (!root.is_object())
    root.fail(fmt::format("expected a model object, got {}", describe_json(doc)));
  root.reject_unknown({"name", "source", "input_elems", "arch", "layers"});
  Model model;
  model.name = non_empty_string(root.at("name"));
  if (!expected_name.empty() && model.name != expected_name)
    root.at("name").fail(fmt::format("expected \"{}\" (the file's name), got \"{}\"", expected_name, model.name));
  model.source = non_empty_string(root.at("source"));
  model.input_elems = root.at("input_elems").as_positive();
  if (auto arch = root.find("arch")) {
    for (const auto& [key, value] : arch->members())
      model.arch[key] = value.as_positive();
  }
  read_layers(root.at("layers"), model);
  return model;
}

namespace {

Model read_model(const std::string& file, const std::string& expected_name)
{
  return parse_model(load_json_file(file), file, expected_name);
}

bool ends_with(const std::string& s, const std::string& suffix)
{
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A relative path is taken from the working directory, else from the folder of the file that named it.
std::string resolve_model_path(const std::string& path, const std::string& origin_file, const std::string& origin_pointer)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto found = [&](const std::string& p) {
    if (!origin_file.empty() && fs::is_directory(p, ec))  // blamed on who named it, not by the folder's name alone
      throw InputError(origin_file, origin_pointer,
                       fmt::format("model file \"{}\" is a directory (expected a model name or a .json file)", path));
    return fs::exists(p, ec);
  };
  if (found(path))
    return path;
  if (!origin_file.empty() && fs::path(path).is_relative()) {
    const fs::path beside = fs::path(origin_file).parent_path() / path;
    if (found(beside.string()))
      return beside.string();
  }
  if (origin_file.empty())
    return path;  // load_json_file reports the missing file by its own name
  throw InputError(origin_file, origin_pointer,
                   fmt::format("model file \"{}\" does not exist (expected a model name or an existing .json file)", path));
}

}  // namespace

Model load_model(const std::string& name_or_path, const std::string& origin_file, const std::string& origin_pointer)
{
  if (ends_with(name_or_path, ".json"))
    return read_model(resolve_model_path(name_or_path, origin_file, origin_pointer), "");
  const auto names = model_names();
  if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
    const std::string known = names.empty() ? fmt::format("none found in {}/models", data_dir())
                                            : fmt::format("{}", fmt::join(names, ", "));
    throw InputError(origin_file.empty() ? "model name" : origin_file, origin_pointer,
                     fmt::format("unknown model \"{}\"{} (expected one of: {}; or a path to a .json model file)",
                                 name_or_path, did_you_mean(name_or_path, names), known));
  }
  return read_model(data_file("models", name_or_path), name_or_path);
}

std::vector<std::string> model_names()
{
  return data_names("models");
}

}  // namespace dtsim
