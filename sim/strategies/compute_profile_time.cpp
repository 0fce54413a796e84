// Per-layer times from a measured profile (training.compute.profile).
#include "sim/strategies/compute_time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace dtsim {

LayerTimes profiled_layer_times(const Model& model, const Scenario& scenario, double samples, double h)
{
  const ComputeProfileSource& p = scenario.training.compute.profile;
  const JsonReader where = scenario.reader().at("training").at("compute").at("profile");
  if (p.model != model.name)
    where.fail(fmt::format("{} profiles model \"{}\", expected model \"{}\" (the scenario's)", p.file, p.model,
                           model.name));
  std::map<std::string, const ProfiledLayer*> by_name;
  for (const auto& l : p.layers)
    by_name[l.name] = &l;
  // Time per forward FLOP of the profiled layers, for the layers without a timing.
  double timed_flops = 0, timed_fwd = 0, timed_bwd = 0;
  std::size_t missing = 0;
  for (const auto& layer : model.layers) {
    const auto it = by_name.find(layer.name);
    if (it == by_name.end()) {
      ++missing;
      continue;
    }
    timed_flops += layer.fwd_flops;
    timed_fwd += it->second->fwd_s;
    timed_bwd += it->second->bwd_s;
    by_name.erase(it);
  }
  if (!by_name.empty())
    where.fail(fmt::format("{}: layer \"{}\" is not a layer of model \"{}\"", p.file, by_name.begin()->first, model.name));
  if (missing > 0 && !(timed_flops > 0))
    where.fail(fmt::format("{}: the timed layers have no FLOPs to spread the {} untimed layers' time by", p.file, missing));

  const double batch = static_cast<double>(p.batch);
  double scale = samples / batch;  // linear in the samples, anchored at the profile's batch
  if (h > 0)
    scale *= (samples + h) / (samples * (batch + h) / batch);
  LayerTimes t;
  t.fwd.resize(model.layers.size());
  t.bwd.resize(model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& layer = model.layers[i];
    const auto timed = std::find_if(p.layers.begin(), p.layers.end(), [&](const ProfiledLayer& l) { return l.name == layer.name; });
    if (timed != p.layers.end()) {
      t.fwd[i] = timed->fwd_s * scale;
      t.bwd[i] = timed->bwd_s * scale;
    } else {
      t.fwd[i] = timed_fwd / timed_flops * layer.fwd_flops * scale;
      t.bwd[i] = timed_bwd / timed_flops * layer.fwd_flops * scale;
    }
  }
  t.optimizer_s = p.optimizer_s;
  t.note = fmt::format("compute: measured per-layer profile ({} of {} layers timed at batch {}, scaled to {} samples)",
                       model.layers.size() - missing, model.layers.size(), p.batch, samples);
  if (missing > 0)
    t.note += fmt::format("; {} layers without a timing got the timed layers' time per FLOP", missing);
  return t;
}

}  // namespace dtsim
