#include "sim/strategies/memory.hpp"
#include "sim/strategies/partition.hpp"

#include <algorithm>

namespace dtsim {

MemoryRules memory_rules(const Scenario& scenario)
{
  const Precision p = scenario.training.precision;
  const auto training = scenario.reader().at("training");
  double states = 1;  // SGD with momentum
  if (const auto opt = training.find("optimizer")) {
    const std::string kind = opt->as_choice({"sgd", "sgd-plain", "adam", "adamw"});
    states = kind == "sgd-plain" ? 0 : kind == "sgd" ? 1 : 2;
  }
  MemoryRules r;
  const bool half = p == Precision::Fp16 || p == Precision::Bf16;
  r.weight_bytes = half ? 2 + 4 : p == Precision::Amp ? 4 + 2 : 4;
  r.grad_bytes = half ? 2 : 4;
  r.optimizer_bytes = 4 * states;
  r.activation_bytes = (p == Precision::Fp32 || p == Precision::Tf32) ? 4 : 2;
  return r;
}

double params_in(const Model& model, std::size_t first, std::size_t last)
{
  double n = 0;
  for (std::size_t i = first; i < last; ++i)
    n += static_cast<double>(model.layers[i].params());
  return n;
}

double activations_in(const Model& model, std::size_t first, std::size_t last)
{
  double n = 0;
  for (std::size_t i = first; i < last; ++i)
    n += model.layers[i].activation_elems;
  return n;
}

GpuMemory replica_memory(const Model& model, const MemoryRules& rules, std::size_t first, std::size_t last,
                         double param_share, double samples_in_flight, bool holds_optimizer)
{
  GpuMemory m;
  const double params = params_in(model, first, last) * param_share;
  m.params = params * rules.weight_bytes;
  m.grads = params * rules.grad_bytes;
  m.optimizer = holds_optimizer ? params * rules.optimizer_bytes : 0;
  m.activations = activations_in(model, first, last) * param_share * samples_in_flight * rules.activation_bytes;
  return m;
}

double full_recompute_activations(const Model& model, std::size_t first, std::size_t last, double samples_in_flight,
                                  double micro, double activation_bytes, int tensor_parallel)
{
  double kept = 0, largest_block = 0;
  double outside = activations_in(model, first, last);  // less each transformer layer inside: the rest
  for (const auto& b : transformer_layers(model)) {
    if (b.first < first || b.last > last)
      continue;
    const double block = activations_in(model, b.first, b.last);
    kept += b.first > 0 ? model.layers[b.first - 1].activation_elems : 0;
    largest_block = std::max(largest_block, block);
    outside -= block;
  }
  return ((kept + outside) * samples_in_flight + largest_block * micro) * activation_bytes / tensor_parallel;
}

}  // namespace dtsim
