// The scenario's training section and the strategy's parallel degrees, parsed once into typed
// settings (scenario.hpp: TrainingSpec, StrategySpec, BatchSpec), and the batch resolved for the
// strategy from training.micro_batch and global_batch or the older batch_per_gpu.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/util/json_reader.hpp"

#include <string>

namespace dtsim {

/// training.precision.
Precision parse_precision(const JsonReader& precision);

/// The training section, its batch as given (resolve_batch completes it). Throws InputError.
TrainingSpec parse_training(const JsonReader& training);

/// The parallel degrees of strategy `kind` (a name as_choice admitted) on `gpus` GPUs: a hybrid's
/// tensor_parallel and pipeline_stages must divide the GPUs (an error at /gpus names them).
StrategySpec parse_strategy_degrees(const JsonReader& root, const std::string& kind, int gpus);

/// Completes training.batch and training.batch_per_gpu for the strategy (BatchSpec): exit-2
/// errors name both fields when micro_batch x replicas does not divide global_batch, and the
/// strategy's gradient_accumulation or microbatches when it disagrees with them.
void resolve_batch(const JsonReader& root, const StrategySpec& strategy, TrainingSpec& training);

}  // namespace dtsim
