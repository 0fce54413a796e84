// Splitting a model's layers into pipeline stages: either an explicit balance (layers per stage, as
// torchgpipe's `balance`) or automatically, minimising the slowest stage's forward+backward time,
// always cutting only where Model::cut_allowed_after allows (never inside a block).
#pragma once

#include "sim/model/model.hpp"
#include "sim/util/json_reader.hpp"

#include <cstddef>
#include <vector>

namespace dtsim {

struct StageRange {
  std::size_t first = 0;  ///< first layer
  std::size_t last = 0;   ///< one past the last layer
};

/// `balance` = layers per stage; InputError at `where` when it does not cover the model or cuts a block.
std::vector<StageRange> partition_explicit(const Model& model, const std::vector<std::size_t>& balance,
                                           const JsonReader& where);

/// Transformer layers of a model: each block holding an attention layer, as [first, last) layer
/// ranges in model order (empty for a model without attention, e.g. a CNN).
std::vector<StageRange> transformer_layers(const Model& model);

/// Megatron-LM's split: `per_stage[s]` transformer layers on stage s (each block whole), the layers
/// before the first transformer layer (embeddings) on the first stage and those after the last
/// (final norm, head, loss) on the last, as megatron/core/transformer/transformer_block.py gives
/// each pipeline rank num_layers / pipeline_model_parallel_size layers. InputError at `where`
/// when the counts do not add up to the model's transformer layers or a stage gets none.
std::vector<StageRange> partition_transformer(const Model& model, const std::vector<std::size_t>& per_stage,
                                              const JsonReader& where);

/// Megatron's even split over `stages` stages: InputError at `where` when they do not divide the
/// model's transformer layers (Megatron asserts num_layers % pipeline_model_parallel_size == 0).
std::vector<StageRange> partition_transformer_even(const Model& model, int stages, const JsonReader& where);

/// `cost[i]` = time of layer i; the partition into `stages` stages whose largest stage cost is
/// smallest (ties: the earliest cuts). InputError at `where` when the model has fewer cut points.
std::vector<StageRange> partition_balanced(const Model& model, const std::vector<double>& cost, int stages,
                                           const JsonReader& where);

}  // namespace dtsim
