// See shard_units.hpp.
#include "sim/strategies/shard_units.hpp"

#include "sim/strategies/memory.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

/// The wrapped unit a layer belongs to, by name: its transformer layer, else the first part of its
/// block's name when the block is a sub-block ("layer2.1" -> "layer2": a ResNet stage); "" is the root.
std::vector<std::string> unit_names(const Model& model)
{
  std::vector<std::string> names(model.layers.size());
  const auto blocks = transformer_layers(model);
  for (std::size_t b = 0; b < blocks.size(); ++b)
    for (std::size_t i = blocks[b].first; i < blocks[b].last; ++i)
      names[i] = fmt::format("transformer layer {}", b);
  if (!blocks.empty())
    return names;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const std::string& block = model.layers[i].block;
    const auto dot = block.find('.');
    if (!block.empty() && block != model.layers[i].name && dot != std::string::npos)
      names[i] = block.substr(0, dot);
  }
  return names;
}

}  // namespace

ShardUnits shard_units(const Model& model)
{
  ShardUnits out;
  out.units.push_back({"root", 0, 0, 0});
  const auto names = unit_names(model);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    int unit = 0;
    if (!names[i].empty()) {
      if (out.units.back().name != names[i])
        out.units.push_back({names[i], 0, 0, 0});
      unit = static_cast<int>(out.units.size()) - 1;
    }
    auto& u = out.units[static_cast<std::size_t>(unit)];
    const auto p = model.layers[i].params();
    u.params += static_cast<double>(p);
    u.largest_layer_params = std::max(u.largest_layer_params, static_cast<std::size_t>(p));
    if (unit != 0 && model.layers[i].kind == "linear")
      u.linear_params += static_cast<double>(p);
    if (out.segments.empty() || out.segments.back().unit != unit)
      out.segments.push_back({{i, i + 1}, unit});
    else
      out.segments.back().layers.last = i + 1;
  }
  return out;
}

double embedding_params(const Model& model)
{
  double p = 0;
  for (const Layer& l : model.layers)
    if (l.kind == "embedding")
      p += static_cast<double>(l.params());
  return p;
}

}  // namespace dtsim
