// The critical path by kind of step (sim/report/critical_path.hpp): its parts add up to the
// iteration time, and it names what a run is bound by.
#include "sim/predict/predict.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace dtsim;

namespace {

Prediction run(const std::string& kind, int gpus, const std::string& dataset, int workers,
               const std::string& collectives = "auto")
{
  const nlohmann::json cluster =
      gpus > 8 ? nlohmann::json{{"base", "dgx1-v100"}, {"nodes", gpus / 8}} : nlohmann::json("dgx1-v100");
  const nlohmann::json doc = {{"cluster", cluster},
                              {"model", "resnet50"},
                              {"training",
                               {{"dataset_samples", 1281167}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "fp32"},
                                {"compute", {{"single_gpu_throughput", 360}}},
                                {"loader", {{"dataset", dataset}, {"workers", workers}}}}},
                              {"strategy", {{"kind", kind}}},
                              {"gpus", gpus},
                              {"simulation", {{"iterations", 3}, {"warmup", 1}, {"collectives", collectives}}}};
  return predict(parse_scenario(doc, "test.json"));
}

double sum(const std::vector<CriticalPart>& parts)
{
  double s = 0;
  for (const auto& p : parts)
    s += p.seconds;
  return s;
}

}  // namespace

TEST_CASE("the critical path covers the iteration: its parts add up to the iteration time")
{
  for (const char* kind : {"ddp", "dp"}) {
    CAPTURE(kind);
    const Prediction p = run(kind, 4, "synthetic", 4);
    REQUIRE(!p.result.critical_path.empty());
    CHECK(sum(p.result.critical_path) == doctest::Approx(p.result.iteration_time_s).epsilon(1e-9));
    for (std::size_t k = 1; k < p.result.critical_path.size(); ++k)
      CHECK(p.result.critical_path[k - 1].seconds >= p.result.critical_path[k].seconds);
  }
}

TEST_CASE("compute-bound DDP is led by backward; a starved DataLoader puts load first")
{
  const Prediction fast = run("ddp", 4, "synthetic", 4);
  CHECK(fast.result.critical_path.front().category == TaskCategory::Backward);
  const Prediction starved = run("dp", 4, "imagenet-jpeg", 1);  // one worker for the global batch
  CHECK(starved.result.critical_path.front().category == TaskCategory::Load);
  CHECK(sum(starved.result.critical_path) == doctest::Approx(starved.result.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("replayed collectives: the path continues at the rank that joined last, as the full run's does")
{
  // A replayed collective starts on every rank at the join of all its ranks' start dependencies
  // (collective_replay.hpp), which no task of the graph holds: the walk must not stop at a rank that
  // joined early (it once summed to under 40% of the iteration, with the AllReduces' share inflated).
  const Prediction full = run("ddp", 16, "synthetic", 4, "full");
  const Prediction replayed = run("ddp", 16, "synthetic", 4, "replay");
  CHECK(sum(replayed.result.critical_path) == doctest::Approx(replayed.result.iteration_time_s).epsilon(1e-9));
  REQUIRE(replayed.result.critical_path.size() == full.result.critical_path.size());
  for (std::size_t k = 0; k < full.result.critical_path.size(); ++k) {
    CHECK(replayed.result.critical_path[k].category == full.result.critical_path[k].category);
    CHECK(replayed.result.critical_path[k].seconds == doctest::Approx(full.result.critical_path[k].seconds).epsilon(0.01));
  }
}
