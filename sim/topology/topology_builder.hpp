// Builds a Topology from the topology schema: a preset name (topologies/NAME.json), a file, or an
// inline object that may start from a preset with "base" and override fields.
#pragma once

#include "sim/topology/topology.hpp"
#include "sim/util/json_reader.hpp"

#include <optional>
#include <string>

namespace dtsim {

/// `cluster` is the JSON value (a string naming a preset or file, or an object); errors name its
/// file and pointer. `nodes` (from --nodes) overrides the "nodes" field. The calibration file the
/// cluster names is recorded (Topology::calibration), not applied.
Topology build_topology(const JsonReader& cluster, std::optional<int> nodes = std::nullopt);

/// For --topology NAME|FILE on the command line (`option`: the option's spelling, which errors name).
Topology load_topology(const std::string& name_or_file, std::optional<int> nodes = std::nullopt,
                       const std::string& option = "--topology");

std::vector<std::string> topology_preset_names();

}  // namespace dtsim
