#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

Precision parse_precision(const JsonReader& r)
{
  const std::string p = r.as_choice({"fp32", "tf32", "amp", "fp16", "bf16"});
  if (p == "tf32")
    return Precision::Tf32;
  if (p == "amp")
    return Precision::Amp;
  if (p == "fp16")
    return Precision::Fp16;
  if (p == "bf16")
    return Precision::Bf16;
  return Precision::Fp32;
}

ComputeSpec parse_compute(const JsonReader& r)
{
  r.reject_unknown({"step_time_s", "single_gpu_throughput", "gpu", "efficiency", "profile", "jitter_cv"});
  const int given = static_cast<int>(r.has("step_time_s")) + static_cast<int>(r.has("single_gpu_throughput")) +
                    static_cast<int>(r.has("gpu") || r.has("efficiency")) + static_cast<int>(r.has("profile"));
  if (given != 1)
    r.fail("expected exactly one of {\"step_time_s\": s}, {\"single_gpu_throughput\": samples/s}, "
           "{\"gpu\": name, \"efficiency\": fraction} or {\"profile\": calibration or profile .json}");
  ComputeSpec c;
  if (r.has("profile")) {
    c.source = ComputeSpec::Source::Profile;
    c.profile = read_compute_profile_source(r.at("profile"));
  } else if (r.has("step_time_s")) {
    c.source = ComputeSpec::Source::StepTime;
    c.step_time_s = r.at("step_time_s").as_positive_at_most(1e6);  // 11 days: far beyond any training step
  } else if (r.has("single_gpu_throughput")) {
    c.source = ComputeSpec::Source::Throughput;
    c.single_gpu_throughput = r.at("single_gpu_throughput").as_positive();
  } else {
    c.source = ComputeSpec::Source::Flops;
    c.gpu = r.string_or("gpu", "");
    const auto eff = r.at("efficiency");
    c.efficiency = eff.as_positive();
    if (c.efficiency < 1e-3)  // 0.1% of peak: below any training workload (a run took 1e300 s at 1e-300)
      eff.fail(fmt::format("expected a fraction of the GPU's peak from 0.001 to 1, got {:g}", c.efficiency));
    if (c.efficiency > 1)
      eff.fail(fmt::format("expected a fraction of peak in (0, 1], got {}", c.efficiency));
  }
  return c;
}

TrainingSpec parse_training(const JsonReader& r)
{
  r.reject_unknown({"dataset_samples", "batch_per_gpu", "epochs", "precision", "compute", "loader", "optimizer"});
  TrainingSpec t;
  t.dataset_samples = r.at("dataset_samples").as_positive_int();
  t.batch_per_gpu = r.at("batch_per_gpu").as_count(1 << 24);
  t.epochs = r.at("epochs").as_positive();
  if (t.epochs * static_cast<double>(t.dataset_samples) < 1)
    r.at("epochs").fail(fmt::format("expected epochs x dataset_samples to be at least one sample, got {:g} x {}",
                                    t.epochs, t.dataset_samples));
  t.precision = r.has("precision") ? parse_precision(r.at("precision")) : Precision::Fp32;
  t.compute = parse_compute(r.at("compute"));
  return t;
}

}  // namespace

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
  s.name = root.string_or("name", "");
  if (auto description = root.find("description"))
    description->as_string();
  root.at("cluster");  // must exist; the topology builder validates its content
  parse_scenario_model(root.at("model"), s);
  s.training = parse_training(root.at("training"));
  const auto strategy = root.at("strategy");
  s.strategy = strategy.at("kind").as_choice({"ddp", "dp", "pipeline", "hybrid", "single"});
  const auto gpus = root.at("gpus");
  const auto n = gpus.as_positive_int();
  if (n > 1'000'000)
    gpus.fail(fmt::format("expected a GPU count up to 1000000, got {}", n));  // then at most the cluster's
  s.gpus = static_cast<int>(n);
  if (const auto ref = root.find("reference_compute")) {
    ref->reject_unknown({"single_gpu_throughput", "source"});
    s.reference_throughput = ref->at("single_gpu_throughput").as_positive_at_most(1e9);
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
