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

/// `cost[i]` = time of layer i; the partition into `stages` stages whose largest stage cost is
/// smallest (ties: the earliest cuts). InputError at `where` when the model has fewer cut points.
std::vector<StageRange> partition_balanced(const Model& model, const std::vector<double>& cost, int stages,
                                           const JsonReader& where);

}  // namespace dtsim
