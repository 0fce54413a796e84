#include "calibration/compute_profile.hpp"

#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace dtsim::calibration {

namespace {

const std::vector<std::string> kPrecisions = {"fp32", "tf32", "fp16", "bf16"};

KernelTiming read_kernel(const JsonReader& k)
{
  k.reject_unknown({"kind", "precision", "shape", "flops", "median_s", "min_s", "max_s", "repeats", "tflops",
                    "algorithm"});
  KernelTiming t;
  t.kind = k.at("kind").as_choice({"gemm", "conv"});
  t.precision = k.at("precision").as_choice(kPrecisions);
  t.shape = k.string_or("shape", "");
  t.flops = k.at("flops").as_positive();
  t.median_s = k.at("median_s").as_positive_at_most(1e6);
  t.min_s = k.find("min_s") ? k.at("min_s").as_positive() : t.median_s;
  t.max_s = k.find("max_s") ? k.at("max_s").as_positive() : t.median_s;
  if (t.min_s > t.median_s || t.max_s < t.median_s)
    k.fail("expected min_s <= median_s <= max_s");
  t.repeats = k.count_or("repeats", 1);
  return t;
}

/// A measured time of one layer or kernel (s): at most 1e6 s (11 days), as a scenario's step time.
double seconds(const JsonReader& r)
{
  const double v = r.as_non_negative();
  if (v > 1e6)
    r.fail(fmt::format("expected a time from 0 to 1e6 s (11 days: beyond any layer or kernel), got {:g}", v));
  return v;
}

LayerTiming read_layer(const JsonReader& l)
{
  l.reject_unknown({"name", "fwd_s", "bwd_s", "fwd_spread_s", "bwd_spread_s", "module"});
  LayerTiming t;
  t.name = l.at("name").as_string();
  t.fwd_s = seconds(l.at("fwd_s"));
  t.bwd_s = seconds(l.at("bwd_s"));
  t.fwd_spread_s = l.find("fwd_spread_s") ? seconds(l.at("fwd_spread_s")) : 0.0;
  t.bwd_spread_s = l.find("bwd_spread_s") ? seconds(l.at("bwd_spread_s")) : 0.0;
  return t;
}

}  // namespace

void read_compute_profile(const nlohmann::json& doc, const std::string& file, ComputeProfile& into)
{
  const JsonReader root(doc, file);
  if (!root.is_object())
    root.fail("expected a JSON object written by dtsim-bench-compute or profile_model.py");
  root.reject_unknown({"tool", "schema_version", "gpu", "kernels", "model", "not_measured", "settings"});
  root.at("tool").as_choice({"dtsim-bench-compute", "dtsim-profile-model"});
  if (root.at("schema_version").as_int() != 1)
    root.at("schema_version").fail("expected schema_version 1");
  const std::string gpu = root.at("gpu").at("name").as_string();
  if (!into.gpu.empty() && into.gpu != gpu)
    root.at("gpu").at("name").fail(fmt::format("expected the same GPU as {} (\"{}\")", into.file, into.gpu));
  into.gpu = gpu;
  if (into.file.empty())
    into.file = file;
  if (auto kernels = root.find("kernels"))
    for (const auto& k : kernels->items()) {
      into.kernels.push_back(read_kernel(k));
      into.kernels.back().file = k.file();
      into.kernels.back().pointer = k.pointer();
    }
  if (auto model = root.find("model")) {
    model->reject_unknown({"name", "batch", "precision", "layers", "source", "optimizer_s"});
    if (!into.layers.empty())
      model->fail(fmt::format("expected one model profile only ({} already has one)", into.file));
    into.model = model->at("name").as_string();
    into.batch = model->at("batch").as_count(1 << 24);
    into.optimizer_s = model->find("optimizer_s") ? seconds(model->at("optimizer_s")) : 0.0;
    into.model_precision = model->at("precision").as_choice({"fp32", "tf32", "amp", "fp16", "bf16"});
    std::set<std::string> seen;
    for (const auto& l : model->at("layers").items()) {
      auto t = read_layer(l);
      if (!seen.insert(t.name).second)
        l.at("name").fail("expected each layer name once, found \"" + t.name + "\" again");
      into.layers.push_back(std::move(t));
    }
  }
}

ComputeProfile load_compute_profile(const std::vector<std::string>& paths)
{
  ComputeProfile p;
  for (const auto& path : paths)
    read_compute_profile(load_json_file(path), path, p);
  if (p.kernels.empty() && p.layers.empty())
    throw InputError(paths.empty() ? "" : paths.front(), "", "expected \"kernels\" or \"model\" measurements");
  return p;
}

nlohmann::json compute_fragment(const ComputeProfile& profile, const PeakFlops& peak,
                                const std::optional<std::vector<std::string>>& model_layers)
{
  nlohmann::json out = {{"gpu", profile.gpu}};
  // kind -> precision -> its fastest kernel
  std::map<std::string, std::map<std::string, const KernelTiming*>> fastest;
  for (const auto& k : profile.kernels) {
    const KernelTiming*& f = fastest[k.kind][k.precision];
    if (!f || k.tflops() > f->tflops())
      f = &k;
  }
  for (const auto& [kind, by_precision] : fastest)
    for (const auto& [precision, k] : by_precision)
      out[kind + "_tflops"][precision] = k->tflops();
  // Efficiency of the best GEMM against the GPU's peak: what FLOPs / (peak x efficiency) uses.
  // Above 1 the GEMMs ran faster than the GPU can: the profile was measured on another GPU.
  if (fastest.count("gemm"))
    for (const auto& [precision, k] : fastest["gemm"])
      if (auto it = peak.find(precision); it != peak.end() && it->second > 0) {
        if (k->tflops() * 1e12 > it->second)
          throw InputError(k->file, k->pointer,
                           fmt::format("the best {} GEMM measured {:.4g} TFLOP/s, above the topology's GPU peak of {:.4g} "
                                       "TFLOP/s (expected a profile measured on the topology's GPU; this one says {})",
                                       precision, k->tflops(), it->second / 1e12, profile.gpu.empty() ? "no GPU" : profile.gpu));
        out["efficiency"][precision] = k->tflops() * 1e12 / it->second;
      }
  if (!profile.layers.empty()) {
    out["model"] = {{"name", profile.model}, {"batch", profile.batch}, {"precision", profile.model_precision}};
    nlohmann::json layers = nlohmann::json::array();
    double fwd = 0, bwd = 0;
    for (const auto& l : profile.layers) {
      if (model_layers && std::find(model_layers->begin(), model_layers->end(), l.name) == model_layers->end())
        throw InputError(profile.file, "/model/layers",
                         fmt::format("layer \"{}\" is not a layer of model \"{}\" (expected the layer names of "
                                     "models/{}.json)",
                                     l.name, profile.model, profile.model));
      layers.push_back({{"name", l.name}, {"fwd_s", l.fwd_s}, {"bwd_s", l.bwd_s}});
      fwd += l.fwd_s;
      bwd += l.bwd_s;
    }
    out["layers"] = layers;
    out["model"]["fwd_s"] = fwd;
    out["model"]["bwd_s"] = bwd;
    if (profile.optimizer_s > 0)
      out["model"]["optimizer_s"] = profile.optimizer_s;
    if (model_layers) {
      nlohmann::json missing = nlohmann::json::array();
      for (const auto& name : *model_layers)
        if (std::none_of(profile.layers.begin(), profile.layers.end(), [&](const LayerTiming& l) { return l.name == name; }))
          missing.push_back(name);
      if (!missing.empty())
        out["missing_layers"] = missing;
    }
  }
  return out;
}

}  // namespace dtsim::calibration
