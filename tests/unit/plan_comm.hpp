// A plan's per-iteration communication by "label op" (Plan::comm_per_iteration), for the strategy tests.
#pragma once

#include "sim/strategies/plan.hpp"

#include <map>
#include <string>

namespace dtsim::testing {

/// comm_per_iteration by "label op": (bytes, calls, groups).
inline std::map<std::string, CommGroup> comm_of(const Plan& plan)
{
  std::map<std::string, CommGroup> out;
  for (const auto& c : plan.comm_per_iteration)
    out[c.label + " " + c.op] = c;
  return out;
}

}  // namespace dtsim::testing
