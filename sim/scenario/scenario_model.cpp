#include "sim/scenario/scenario_model.hpp"

#include "sim/model/transformer_family.hpp"

#include <fmt/format.h>

namespace dtsim {

void parse_scenario_model(const JsonReader& value, Scenario& s)
{
  if (value.json().is_string()) {
    s.model = value.as_string();
    s.model_spec.reset();
    return;
  }
  if (!value.is_object())
    value.fail(fmt::format("expected a model name, a .json model file or a model object {{\"family\": ..., \"hidden\": "
                           "..., \"layers\": ..., \"heads\": ..., \"seq_len\": ..., \"vocab\": ...}}, got {}",
                           describe_json(value.json())));
  s.model_spec = parse_transformer_spec(value);
  s.model = s.model_spec->name;
}

Model scenario_model(const Scenario& s)
{
  if (s.model_spec)
    return build_transformer(*s.model_spec);
  return load_model(s.model, s.file, "/model");
}

}  // namespace dtsim
