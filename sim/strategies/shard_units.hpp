// The units of sharded data parallelism: what FSDP gathers and reduce-scatters as one piece.
//
// PyTorch's usual auto-wrap policy (transformer_auto_wrap_policy with the transformer block class,
// as torchtitan's apply_fsdp and the FSDP tutorials do; ModuleWrapPolicy on a CNN's stages) makes
// one unit per transformer layer (or per ResNet stage: the blocks named layerN.*), and the root
// unit holds every parameter left over: embeddings, the final norm, the output layer. The root is
// gathered first, before the first forward, and kept until the end of backward (FSDP1
// _runtime_utils.py does not reshard the root after forward; FSDP2 fully_shard's default
// reshard_after_forward=None is False for the root).
#pragma once

#include "sim/model/model.hpp"
#include "sim/strategies/partition.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct ShardUnit {
  std::string name;          ///< "root", "transformer layer 3", "layer2"
  double params = 0;         ///< parameters of the whole unit (all tensor ranks together)
  std::size_t largest_layer_params = 0;
  double linear_params = 0;  ///< of them, its transformer block's linears' (0 for the root)
};

/// A stretch of layers run in one go, in model order, and the unit whose parameters it uses.
struct UnitSegment {
  StageRange layers;
  int unit = 0;              ///< index into ShardUnits::units; 0 is the root
};

struct ShardUnits {
  std::vector<ShardUnit> units;        ///< [0] is the root, then the wrapped units in forward order
  std::vector<UnitSegment> segments;   ///< every layer of the model once, in forward order
};

/// The units of `model` as the auto-wrap policy makes them (see above).
ShardUnits shard_units(const Model& model);

/// Parameters of the model's token embeddings (layers of kind "embedding"): part of the root unit.
double embedding_params(const Model& model);

}  // namespace dtsim
