#include "sim/scenario/scenario.hpp"
#include "sim/scenario/training_settings.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"
#include "sim/util/one_line.hpp"

#include <fmt/format.h>

namespace dtsim {

Scenario parse_scenario(nlohmann::json doc, const std::string& file)
{
  Scenario s;
  s.file = file;
  s.doc = std::move(doc);
  const JsonReader root = s.reader();
  if (!root.is_object())
    root.fail("expected a scenario object with cluster, model, training, strategy and gpus");
  root.reject_unknown({"name", "description", "cluster", "model", "training", "strategy", "gpus", "simulation",
                       "reference_compute"});
  // The name is printed (by run, sweep, compare and report's title): text, not a newline or a
  // terminal escape sequence, as a runs CSV's ids. The description is read, never printed.
  if (auto name = root.find("name"))
    if (has_control_character(name->as_string()))
      name->fail(fmt::format("expected a name without control characters (a newline, an escape), got \"{}\"",
                             name->as_string()));
  if (auto description = root.find("description"))
    description->as_string();
  s.name = root.string_or("name", "");
  root.at("cluster");  // must exist; the topology builder validates its content
  parse_scenario_model(root.at("model"), s);
  s.training = parse_training(root.at("training"));
  const auto strategy = root.at("strategy");
  s.strategy = strategy.at("kind").as_choice({"ddp", "dp", "pipeline", "hybrid", "single", "fsdp", "zero"});
  const auto gpus = root.at("gpus");
  const auto n = gpus.as_positive_int();
  if (n > 1'000'000)
    gpus.fail(fmt::format("expected a GPU count up to 1000000, got {}", n));  // then at most the cluster's
  s.gpus = static_cast<int>(n);
  s.strategy_spec = parse_strategy_degrees(root, s.strategy, s.gpus);
  resolve_batch(root, s.strategy_spec, s.training);
  if (const auto ref = root.find("reference_compute")) {
    ref->reject_unknown({"single_gpu_throughput", "source"});
    // The range of training.compute.single_gpu_throughput, which run puts it in.
    s.reference_throughput = ref->at("single_gpu_throughput").as_number_in(1e-6, 1e9);
    s.reference_source = ref->at("source").as_string();
  }
  return s;
}

InputError blamed_on_overrides(const InputError& e, const Scenario& s)
{
  if (e.file() != s.file || e.problem().rfind("unknown member", 0) != 0)
    return e;
  try {
    if (s.file_doc.contains(nlohmann::json::json_pointer(e.pointer())))
      return e;
  } catch (const nlohmann::json::exception&) {
    return e;
  }
  const auto within = [](const std::string& inner, const std::string& outer) {
    return inner == outer || inner.rfind(outer + "/", 0) == 0;
  };
  for (const auto& o : s.overrides) {
    std::string set_at;
    for (const auto& part : split_override_path(o.path))
      set_at += "/" + json_pointer_escape(part);
    if (within(set_at, e.pointer()) || within(e.pointer(), set_at))
      return InputError(o.origin + " " + o.path, e.pointer(), e.problem());
  }
  return e;
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides)
{
  nlohmann::json doc = load_json_file(path);
  Scenario partial;  // what blamed_on_overrides needs, should the document be refused
  partial.file = path;
  partial.file_doc = doc;
  partial.overrides = overrides;
  apply_overrides(doc, overrides);
  try {
    Scenario s = parse_scenario(std::move(doc), path);
    s.file_doc = std::move(partial.file_doc);
    s.overrides = overrides;
    return s;
  } catch (const InputError& e) {
    throw blamed_on_overrides(e, partial);
  }
}

}  // namespace dtsim
