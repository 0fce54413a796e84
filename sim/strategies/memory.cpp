#include "sim/strategies/memory.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

MemoryRules memory_rules(Precision p, std::string optimizer)
{
  MemoryRules r;
  for (const auto& [suffix, step] : {std::pair<std::string, OptimizerStep>{"-foreach", OptimizerStep::Foreach},
                                     {"-fused", OptimizerStep::Fused}, {"-for-loop", OptimizerStep::ForLoop}})
    if (optimizer.size() > suffix.size() &&
        optimizer.compare(optimizer.size() - suffix.size(), suffix.size(), suffix) == 0) {
      optimizer.resize(optimizer.size() - suffix.size());
      r.step = step;
    }
  const double states = optimizer == "sgd-plain" ? 0 : optimizer == "sgd" ? 1 : 2;
  r.adam = optimizer == "adam" || optimizer == "adamw";
  const bool half = p == Precision::Fp16 || p == Precision::Bf16;
  r.weight_bytes = half ? 2 + 4 : p == Precision::Amp ? 4 + 2 : 4;
  r.stored_weight_bytes = half ? 2 + 4 : 4;
  r.grad_bytes = half ? 2 : 4;
  r.optimizer_bytes = 4 * states;
  r.activation_bytes = (p == Precision::Fp32 || p == Precision::Tf32) ? 4 : 2;
  return r;
}

MemoryRules memory_rules(const Scenario& scenario)
{
  return memory_rules(scenario.training.precision, scenario.training.optimizer);
}

double params_in(const Model& model, std::size_t first, std::size_t last)
{
  double n = 0;
  for (std::size_t i = first; i < last; ++i)
    n += static_cast<double>(model.layers[i].params());
  return n;
}

double largest_param_tensor(const Model& model, std::size_t first, std::size_t last)
{
  double largest = 0;
  for (std::size_t i = first; i < last; ++i)
    for (const auto t : model.layers[i].param_tensors)
      largest = std::max(largest, static_cast<double>(t));
  return largest;
}

}  // namespace dtsim
