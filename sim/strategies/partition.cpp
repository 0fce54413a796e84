#include "sim/strategies/partition.hpp"

#include <fmt/format.h>

#include <limits>

namespace dtsim {

std::vector<StageRange> partition_explicit(const Model& model, const std::vector<std::size_t>& balance,
                                           const JsonReader& where)
{
  std::vector<StageRange> out;
  std::size_t next = 0;
  for (std::size_t s = 0; s < balance.size(); ++s) {
    if (balance[s] == 0)
      where.fail(fmt::format("stage {} has no layers", s));
    const StageRange r{next, next + balance[s]};
    if (r.last > model.layers.size())
      where.fail(fmt::format("the balance covers more than the model's {} layers", model.layers.size()));
    if (r.last < model.layers.size() && !model.cut_allowed_after(r.last - 1))
      where.fail(fmt::format("stage {} ends inside block \"{}\" (after layer \"{}\"); cuts must fall between blocks", s,
                             model.layers[r.last - 1].block, model.layers[r.last - 1].name));
    out.push_back(r);
    next = r.last;
  }
  if (next != model.layers.size())
    where.fail(fmt::format("the balance covers {} layers, the model has {}", next, model.layers.size()));
  return out;
}

std::vector<StageRange> transformer_layers(const Model& model)
{
  std::vector<StageRange> out;
  for (std::size_t i = 0; i < model.layers.size();) {
    std::size_t end = i + 1;
    while (end < model.layers.size() && !model.cut_allowed_after(end - 1))
      ++end;
    bool attention = false;
    for (std::size_t k = i; k < end; ++k)
      attention = attention || model.layers[k].kind == "attention";
    if (attention)
      out.push_back({i, end});
    i = end;
  }
  return out;
}

std::vector<StageRange> partition_transformer(const Model& model, const std::vector<std::size_t>& per_stage,
                                              const JsonReader& where)
{
  const auto blocks = transformer_layers(model);
  std::size_t total = 0;
  for (std::size_t s = 0; s < per_stage.size(); ++s) {
    if (per_stage[s] == 0)
      where.fail(fmt::format("stage {} has no transformer layers", s));
    total += per_stage[s];
  }
  if (total != blocks.size())
    where.fail(fmt::format("expected transformer layers per stage adding up to model \"{}\"'s {}, got {}", model.name,
                           blocks.size(), total));
  std::vector<StageRange> out;
  std::size_t block = 0;
  for (std::size_t s = 0; s < per_stage.size(); ++s) {
    const std::size_t first = s == 0 ? 0 : out.back().last;
    block += per_stage[s];
    const std::size_t last = s + 1 == per_stage.size() ? model.layers.size() : blocks[block - 1].last;
    out.push_back({first, last});
  }
  return out;
}

std::vector<StageRange> partition_transformer_even(const Model& model, int stages, const JsonReader& where)
{
  const auto layers = transformer_layers(model).size();
  const auto p = static_cast<std::size_t>(stages);
  if (layers % p != 0)
    where.fail(fmt::format("expected pipeline stages that divide model \"{}\"'s {} transformer layers (Megatron splits "
                           "them evenly), got {}; give strategy.balance (transformer layers per stage) for an uneven split",
                           model.name, layers, stages));
  return partition_transformer(model, std::vector<std::size_t>(p, layers / p), where);
}

std::vector<StageRange> partition_balanced(const Model& model, const std::vector<double>& cost, int stages,
                                           const JsonReader& where)
{
  // Units: maximal runs of layers between allowed cuts.
  std::vector<std::size_t> unit_end;  // one past each unit's last layer
  std::vector<double> prefix{0};      // cost up to each unit end
  double acc = 0;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    acc += cost[i];
    if (i + 1 == model.layers.size() || model.cut_allowed_after(i)) {
      unit_end.push_back(i + 1);
      prefix.push_back(acc);
    }
  }
  const auto units = static_cast<int>(unit_end.size());
  if (stages > units)
    where.fail(fmt::format("expected at most {} pipeline stages for model \"{}\" (it has {} places where it can be cut "
                           "between blocks), got {}",
                           units, model.name, units - 1, stages));
  // best[s][u]: smallest max-stage cost splitting the first u units into s stages.
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(static_cast<std::size_t>(stages) + 1,
                                        std::vector<double>(static_cast<std::size_t>(units) + 1, inf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(best[0].size(), 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int u = s; u <= units; ++u) {
      for (int v = s - 1; v < u; ++v) {
        const double c = std::max(best[s - 1][v], prefix[u] - prefix[v]);
        if (c < best[s][u] * (1 - 1e-12)) {
          best[s][u] = c;
          cut[s][u] = v;
        }
      }
    }
  }
  std::vector<StageRange> out(static_cast<std::size_t>(stages));
  int u = units;
  for (int s = stages; s >= 1; --s) {
    const int v = cut[s][u];
    out[static_cast<std::size_t>(s - 1)] = {v == 0 ? 0 : unit_end[static_cast<std::size_t>(v - 1)],
                                            unit_end[static_cast<std::size_t>(u - 1)]};
    u = v;
  }
  return out;
}

}  // namespace dtsim
