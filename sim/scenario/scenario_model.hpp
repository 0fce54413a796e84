// The scenario's model: a shipped model's name, a layer-table file (.json), or an inline transformer
// given by its hyperparameters ({"family": "llama", "hidden": ..., ...}, transformer_family.hpp).
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/util/json_reader.hpp"

namespace dtsim {

/// Reads the scenario's "model" into s.model (the name or path; an inline model's name) and
/// s.model_spec (an inline model, parsed and checked here once). InputError naming the file and
/// the pointer when it is neither a string nor a valid model object.
void parse_scenario_model(const JsonReader& value, Scenario& s);

/// The scenario's layer table: built from its inline model, or loaded by name or path (an unknown
/// name or a missing file is an InputError at /model of the scenario file).
Model scenario_model(const Scenario& s);

}  // namespace dtsim
