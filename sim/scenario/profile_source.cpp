// training.compute.profile: per-layer forward/backward seconds measured on one GPU, read from a
// calibration file's "compute" section (dtsim calibrate) or from profile_model.py's JSON itself.
#include "sim/scenario/scenario.hpp"
#include "sim/util/data_paths.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <set>

namespace dtsim {

namespace {

std::string beside(const std::string& ref, const std::string& file)
{
  namespace fs = std::filesystem;
  const fs::path p(ref);
  if (p.is_relative() && !file.empty())
    return (fs::path(file).parent_path() / p).string();
  return ref;
}

/// A measured time of one layer (s): at most 1e6 s (11 days), as training.compute.step_time_s.
double seconds(const JsonReader& r)
{
  const double v = r.as_non_negative();
  if (v > 1e6)
    r.fail(fmt::format("expected a time from 0 to 1e6 s (11 days: beyond any layer), got {:g}", v));
  return v;
}

}  // namespace

ComputeProfileSource read_compute_profile_source(const JsonReader& value)
{
  ComputeProfileSource out;
  out.file = beside(value.as_string(), value.file());
  require_referenced_file(out.file, value.as_string(), value.file(), value.pointer(), /*beside_only=*/true);
  const nlohmann::json doc = load_json_file(out.file);
  const JsonReader root(doc, out.file);
  if (!root.is_object())
    root.fail("expected a calibration file (with \"compute\") or a profile_model.py JSON (with \"model\")");
  // A calibration file: compute.model + compute.layers; a raw profile: model.layers.
  std::optional<JsonReader> model, layers;
  if (auto compute = root.find("compute")) {
    model = compute->find("model");
    layers = compute->find("layers");
    if (!model || !layers)
      compute->fail("expected a per-layer profile (\"model\" and \"layers\"; calibrate with profile_model.py output)");
  } else if (auto m = root.find("model")) {
    model = m;
    layers = m->find("layers");
    if (!layers)
      m->fail("expected \"layers\" with per-layer fwd_s and bwd_s");
  } else {
    root.fail("expected a calibration file with a \"compute\" section or a profile_model.py JSON with \"model\"");
  }
  out.model = model->at("name").as_string();
  out.batch = model->at("batch").as_count(1 << 24);
  if (auto o = model->find("optimizer_s"))
    out.optimizer_s = seconds(*o);
  std::set<std::string> seen;
  for (const auto& l : layers->items()) {
    ProfiledLayer p{l.at("name").as_string(), seconds(l.at("fwd_s")), seconds(l.at("bwd_s"))};
    if (!seen.insert(p.name).second)
      l.at("name").fail(fmt::format("expected each layer once, found \"{}\" again", p.name));
    out.layers.push_back(std::move(p));
  }
  if (out.layers.empty())
    layers->fail("expected at least one timed layer");
  return out;
}

}  // namespace dtsim
