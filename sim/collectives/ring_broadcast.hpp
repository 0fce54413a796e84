#pragma once

#include "sim/collectives/collective.hpp"

namespace dtsim {

CollectiveTasks add_ring_broadcast(TaskGraph& graph, const CollectiveCall& call,
                                   const std::vector<std::vector<int>>& start_after);

}  // namespace dtsim
