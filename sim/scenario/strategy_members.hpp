// The members each strategy.kind takes, in one table. Every builder rejects what its kind does not
// take; a member that another kind takes says which (FSDP's "mixed_precision" under "kind": "dp"
// is "a member of strategy.kind fsdp"), since a kind typed wrong is the likely mistake.
#pragma once

#include "sim/util/json_reader.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// The members strategy.kind `kind` takes ("kind" among them); empty for an unknown kind.
const std::vector<std::string>& strategy_members(const std::string& kind);

/// The members of strategy.kind "zero" that only stage 3 takes (its parameter partitioning's:
/// prefetch, persistence, reuse, live parameters, MiCS and ZeRO++).
const std::vector<std::string>& zero_stage3_members();

/// Throws InputError at the first member of `strategy` (the scenario's strategy object) that its
/// kind does not take: "unknown member ... (a member of strategy.kind fsdp; expected one of ...)".
void reject_unknown_strategy_members(const JsonReader& strategy);

}  // namespace dtsim
