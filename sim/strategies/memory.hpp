// Per-GPU memory of a training set-up: weights, gradients, optimizer state, activations kept for
// backward, and input/output buffers, from the model table and the precision.
//
// Bytes per parameter (the accounting of the ZeRO paper, Rajbhandari et al. 2020, section 3.1):
//   fp32 / tf32 : weights 4, gradients 4, optimizer 4 per state (SGD momentum 1, Adam 2)
//   amp         : as fp32, plus 2 for autocast's half-precision weight copies (counted with weights)
//   fp16 / bf16 : weights 2 + fp32 master 4, gradients 2, optimizer 4 per state
// Activations: every layer's output (activation_elems per sample) is kept for backward, 4 B each in
// fp32/tf32 and 2 B under amp/fp16/bf16. This omits attention scores and cuDNN workspaces, so it
// is a lower bound for transformers.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"

#include <cstddef>

namespace dtsim {

struct MemoryRules {
  double weight_bytes = 4;      ///< per parameter, weights (incl. master copies)
  double grad_bytes = 4;        ///< per parameter
  double optimizer_bytes = 4;   ///< per parameter, all optimizer states together
  double activation_bytes = 4;  ///< per activation element
};

/// From training.precision and training.optimizer ("sgd" = momentum [default], "sgd-plain", "adam",
/// "adamw"); InputError at /training/optimizer otherwise.
MemoryRules memory_rules(const Scenario& scenario);

/// Parameters of layers [first, last).
double params_in(const Model& model, std::size_t first, std::size_t last);
/// Activation elements per sample of layers [first, last).
double activations_in(const Model& model, std::size_t first, std::size_t last);

/// Activations that layers [first, last) keep for `samples_in_flight` samples under full recomputation
/// (Korthikanti et al. 2022, section 5): only each transformer layer's input, plus, for the one layer
/// being recomputed, all of its own for one micro-batch of `micro` samples; layers outside
/// transformer layers keep theirs. Divided by `tensor_parallel` as replica_memory divides a shard.
double full_recompute_activations(const Model& model, std::size_t first, std::size_t last, double samples_in_flight,
                                  double micro, double activation_bytes, int tensor_parallel);

/// A replica (or a shard: `param_share` of its weights, e.g. 1/t under tensor parallelism) of
/// layers [first, last) keeping the activations of `samples_in_flight` samples.
GpuMemory replica_memory(const Model& model, const MemoryRules& rules, std::size_t first, std::size_t last,
                         double param_share, double samples_in_flight, bool holds_optimizer = true);

}  // namespace dtsim
