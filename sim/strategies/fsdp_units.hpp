// Per FSDP unit (shard_units.hpp): what one tensor rank gathers and reduces of it, and where its
// forward segments lie, which orders the units' backward.
#pragma once

#include "sim/model/model.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharding_options.hpp"

#include <vector>

namespace dtsim {

/// Per tensor rank: each unit's parameters, their bytes gathered and reduced.
struct FsdpUnitBytes {
  std::vector<double> params, gather_bytes, reduce_bytes;
  /// Parameters of a replicated token embedding (FsdpOptions::replicate_embedding) whole in each
  /// tensor rank's root beside its own share: counted in unit 0 above.
  double embedding_whole = 0;
};

/// The units of `su` over `tensor` ranks: gathered in param_dtype, or float8 linears beside bf16
/// (gathered_bytes); `ubytes` per element of the unsharded parameters outside the float8 linears (the
/// replicated embedding's), `rbytes` of the reduced gradients (reduce_dtype).
FsdpUnitBytes fsdp_unit_bytes(const Model& model, const ShardUnits& su, const FsdpOptions& opt, int tensor, double ubytes,
                              double rbytes);

/// Per unit its first and last forward segment (-1: none), and the units but the root in the order
/// their backward begins (the reverse of their last forward segment).
struct FsdpUnitOrder {
  std::vector<int> first_segment, last_segment, backward_order;
};

FsdpUnitOrder fsdp_unit_order(const ShardUnits& su);

}  // namespace dtsim
