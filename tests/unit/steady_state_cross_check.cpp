// The fast path against the full flow-level run (issue 15, item 4). With the default iteration
// count, predict() stops simulating once two consecutive measured iterations take the same time
// (3 of 4 iterations); with simulation.iterations set, every iteration runs. For DDP, pipeline and
// hybrid scenarios on 2-256 GPUs: the iteration time within 1%, every collective of the last
// iteration within 2%, and, stronger, every span the fast run kept is the full run's span (the run
// is the same until it stops). With step-time jitter (the straggler moves from rank to rank) it does
// not apply. And the stop rule itself on iterations that do or do not repeat.
#include "sim/engine/engine.hpp"
#include "sim/predict/predict.hpp"
#include "two_gpu_pair.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace dtsim;

namespace {

// No step-time jitter: with it, the straggler moves from rank to rank and the fast path does not
// apply (see the last test case).
nlohmann::json training(int batch)
{
  return {{"dataset_samples", 1281167}, {"batch_per_gpu", batch}, {"epochs", 90}, {"precision", "amp"},
          {"compute", {{"single_gpu_throughput", 3000}, {"jitter_cv", 0}}}};
}

nlohmann::json ddp(int gpus)
{
  return {{"name", "ddp"}, {"cluster", {{"base", "hgx-h100"}, {"nodes", std::max(1, gpus / 8)}}},
          {"model", "resnet50"}, {"training", training(256)}, {"strategy", {{"kind", "ddp"}}}, {"gpus", gpus}};
}

nlohmann::json pipeline(int gpus)
{
  return {{"name", "pipeline"}, {"cluster", {{"base", "hgx-h100"}, {"nodes", 1}}}, {"model", "resnet50"},
          {"training", training(64)},
          {"strategy", {{"kind", "pipeline"}, {"microbatches", 8}, {"schedule", "1f1b"}}}, {"gpus", gpus}};
}

nlohmann::json hybrid(int gpus)
{
  return {{"name", "hybrid"}, {"cluster", {{"base", "hgx-h100"}, {"nodes", std::max(1, gpus / 8)}}},
          {"model", "resnet50"}, {"training", training(128)},
          {"strategy", {{"kind", "hybrid"}, {"pipeline_stages", 2}, {"tensor_parallel", 1}, {"microbatches", 4},
                        {"schedule", "1f1b"}}},
          {"gpus", gpus}};
}

/// Per collective (group) of the iteration, in order of first appearance: first start to last end.
std::vector<double> collective_times(const Prediction& p, int iteration)
{
  std::map<int, std::size_t> index;
  std::vector<Span> spans;
  const auto& tasks = p.plan.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].iteration != iteration || tasks[i].group < 0)
      continue;
    const auto [it, added] = index.emplace(tasks[i].group, spans.size());
    if (added)
      spans.push_back(p.spans[i]);
    Span& s = spans[it->second];
    s.start = std::min(s.start, p.spans[i].start);
    s.end = std::max(s.end, p.spans[i].end);
  }
  std::vector<double> out;
  for (const Span& s : spans)
    out.push_back(s.duration());
  return out;
}

bool has_steady_note(const Prediction& p)
{
  return std::any_of(p.plan.notes.begin(), p.plan.notes.end(),
                     [](const std::string& n) { return n.rfind("steady state:", 0) == 0; });
}

void cross_check(const nlohmann::json& doc)
{
  nlohmann::json full_doc = doc;
  full_doc["simulation"] = {{"iterations", 4}, {"warmup", 1}};
  const Prediction fast = predict(parse_scenario(doc, "fast.json"));
  const Prediction full = predict(parse_scenario(full_doc, "full.json"));
  REQUIRE(full.result.simulated_iterations == 4);
  REQUIRE(fast.result.simulated_iterations >= 3);
  CHECK(has_steady_note(fast) == (fast.result.simulated_iterations < 4));
  CHECK_FALSE(has_steady_note(full));

  CHECK(fast.result.iteration_time_s == doctest::Approx(full.result.iteration_time_s).epsilon(0.01).scale(0));
  const auto fast_collectives = collective_times(fast, fast.result.simulated_iterations - 1);
  const auto full_collectives = collective_times(full, full.result.simulated_iterations - 1);
  REQUIRE(fast_collectives.size() == full_collectives.size());
  for (std::size_t i = 0; i < fast_collectives.size(); ++i) {
    CAPTURE(i);
    CHECK(fast_collectives[i] == doctest::Approx(full_collectives[i]).epsilon(0.02).scale(0));
  }
  // The fast run is the full run's beginning.
  REQUIRE(fast.spans.size() <= full.spans.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < fast.spans.size(); ++i) {
    if (fast.spans[i].start != full.spans[i].start || fast.spans[i].end != full.spans[i].end)
      ++differing;
  }
  CHECK(differing == 0);
}

}  // namespace

TEST_CASE("DDP: the converged fast run matches the full run")
{
  for (const int gpus : {8, 64, 256}) {
    CAPTURE(gpus);
    cross_check(ddp(gpus));
  }
  // The scale scenario converges: 3 of the 4 iterations are simulated.
  CHECK(predict(parse_scenario(ddp(64), "ddp.json")).result.simulated_iterations == 3);
}

TEST_CASE("with step-time jitter every iteration runs")
{
  nlohmann::json doc = ddp(16);
  doc["training"]["compute"].erase("jitter_cv");  // the default, 1.5%
  const Prediction p = predict(parse_scenario(doc, "jitter.json"));
  CHECK(p.result.simulated_iterations == 4);
  CHECK_FALSE(has_steady_note(p));
}

TEST_CASE("pipeline and hybrid: the fast run matches the full run")
{
  for (const int gpus : {2, 4, 8}) {
    CAPTURE(gpus);
    cross_check(pipeline(gpus));
  }
  for (const int gpus : {16, 64}) {
    CAPTURE(gpus);
    cross_check(hybrid(gpus));
  }
}

namespace {

// Two GPUs; iteration k: compute of `seconds(k)` on each, a 1 GB transfer between them, a marker.
// The stop rule sees iteration times only through the marker.
template <class Seconds>
Simulation run_iterations(int iterations, Seconds seconds)
{
  const Topology t = testing::two_gpu_pair();
  TaskGraph g;
  SteadyStateStop stop;
  int last = -1;
  for (int it = 0; it < iterations; ++it) {
    g.set_iteration(it);
    std::vector<int> after = last >= 0 ? std::vector<int>{last} : std::vector<int>{};
    const int a = g.add_compute(t.gpus()[0], seconds(it), "a", TaskCategory::Forward, after);
    const int b = g.add_compute(t.gpus()[1], seconds(it), "b", TaskCategory::Forward, after);
    const int x = g.add_transfer(t.gpus()[0], t.gpus()[1], 1e9, "x", TaskCategory::AllReduce, {a, b});
    last = g.add_delay(t.gpus()[0], 0.0, "end", TaskCategory::Marker, {x});
    stop.iteration_end.push_back(last);
  }
  return simulate_until_steady(t, g, stop);
}

}  // namespace

TEST_CASE("the run stops once two consecutive iterations take the same time, not before")
{
  const Simulation same = run_iterations(6, [](int) { return 0.5; });
  CHECK(same.iterations == 3);
  CHECK(same.spans.back().end < 0);  // later iterations were not returned
  // Each iteration 10% longer than the one before: never converged, every iteration runs.
  const Simulation growing = run_iterations(6, [](int it) { return 0.5 * std::pow(1.1, it); });
  CHECK(growing.iterations == 6);
  CHECK(growing.spans.back().end > 0);
  // Converged late: iterations 0..3 differ, 4 and 5 (and on) repeat.
  const Simulation late = run_iterations(8, [](int it) { return it < 4 ? 0.1 * (it + 1) : 1.0; });
  CHECK(late.iterations == 6);
}
