#include "sim/predict/predict.hpp"

#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/topology/topology_builder.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

struct SimulationSettings {
  int iterations = 4;
  int warmup = 1;
};

SimulationSettings parse_settings(const Scenario& s)
{
  SimulationSettings out;
  const auto r = s.reader().find("simulation");
  if (!r)
    return out;
  r->reject_unknown({"iterations", "warmup"});
  out.warmup = static_cast<int>(r->positive_int_or("warmup", out.warmup));
  out.iterations = static_cast<int>(r->positive_int_or("iterations", out.iterations));
  if (out.iterations <= out.warmup)
    r->at("iterations").fail(fmt::format("expected more iterations than warm-up ({}), got {}", out.warmup, out.iterations));
  if (out.iterations > 100)
    r->at("iterations").fail(fmt::format("expected at most 100 simulated iterations, got {}", out.iterations));
  return out;
}

Plan build_plan(const Scenario& s, const Topology& topology, const Model& model, const SimulationSettings& sim)
{
  if (s.strategy == "ddp" || s.strategy == "single") {
    if (s.strategy == "single" && s.gpus != 1)
      s.reader().at("gpus").fail(fmt::format("strategy \"single\" runs on 1 GPU, got {}", s.gpus));
    return build_ddp_plan(s, topology, model, sim.iterations, sim.warmup);
  }
  s.strategy_options().at("kind").fail(fmt::format("strategy \"{}\" is not available in this version of dtsim (expected ddp or single)", s.strategy));
}

}  // namespace

Prediction predict(const Scenario& s)
{
  const SimulationSettings sim = parse_settings(s);
  Prediction p;
  p.topology = build_topology(s.cluster());
  const Model model = load_model(s.model, s.file, "/model");
  p.plan = build_plan(s, p.topology, model, sim);
  p.spans = simulate(p.topology, p.plan.graph);

  RunResult& r = p.result;
  r.scenario = s.name.empty() ? s.file : s.name;
  r.strategy = s.strategy;
  r.model = model.name;
  r.topology = p.topology.name;
  r.gpu = p.topology.gpu.name;
  r.gpus = s.gpus;
  r.gpus_per_node = p.topology.gpus_per_node;
  r.nodes_used = (s.gpus + p.topology.gpus_per_node - 1) / p.topology.gpus_per_node;
  r.params = model.params();
  r.gradient_bytes = static_cast<double>(model.params()) * gradient_bytes_per_element(s.training.precision);
  r.comm_per_iteration = p.plan.comm_per_iteration;
  r.notes = p.plan.notes;
  r.compute_source = describe_compute_source(s);
  r.dataset_samples = static_cast<double>(s.training.dataset_samples);
  r.epochs = s.training.epochs;
  r.batch_per_gpu = static_cast<double>(s.training.batch_per_gpu);
  analyse(p.plan, p.spans, r);
  return p;
}

}  // namespace dtsim
