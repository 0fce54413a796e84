// Pipeline parallel: with balanced stages and links that cost nothing, the bubble is
// (p-1)/(m+p-1) for GPipe and 1F1B; the naive split (m = 1) is slower than one GPU; pipelining
// beats the naive split; automatic balancing never cuts a block.
#include "sim/predict/predict.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/strategies/pipeline.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace dtsim;

namespace {

// Eight identical layers whose activations are one element: transfers take only link latency.
std::string balanced_model_file()
{
  const std::string path = (std::filesystem::temp_directory_path() / "dtsim-strategy-pipeline-balanced8.json").string();
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    layers.push_back({{"name", "l" + std::to_string(i)}, {"kind", "linear"}, {"params", {1000}},
                      {"fwd_flops", 1e9}, {"activation_elems", 1}, {"buffer_elems", 0}});
  std::ofstream(path) << nlohmann::json{{"name", "balanced8"}, {"source", "test"}, {"input_elems", 1}, {"layers", layers}}.dump();
  return path;
}

nlohmann::json scenario(const std::string& model, int gpus, int micro, const std::string& schedule)
{
  return {{"cluster", "dgx1-v100"},
          {"model", model},
          {"training",
           {{"dataset_samples", 1000}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "fp32"},
            {"compute", {{"step_time_s", 1.0}, {"jitter_cv", 0}}}}},  // the closed forms assume identical stages
          {"strategy", {{"kind", "pipeline"}, {"microbatches", micro}, {"schedule", schedule}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

}  // namespace

TEST_CASE("bubble fraction is (p-1)/(m+p-1) with balanced stages and free links")
{
  const std::string model = balanced_model_file();
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (const auto& pm : {std::pair{2, 1}, {2, 4}, {4, 4}, {4, 16}, {8, 8}}) {
      const int p = pm.first, m = pm.second;  // not a structured binding: CAPTURE's lambda (clang 14)
      CAPTURE(schedule);
      CAPTURE(p);
      CAPTURE(m);
      const auto r = predict(parse_scenario(scenario(model, p, m, schedule), "test.json")).result;
      const double ideal = static_cast<double>(p - 1) / (m + p - 1);
      CHECK(r.bubble_fraction == doctest::Approx(ideal).epsilon(0.002));
      // Iteration = (m + p - 1) micro-batch slots of 1 s / (p m).
      CHECK(r.iteration_time_s == doctest::Approx(static_cast<double>(m + p - 1) / (p * m)).epsilon(0.002));
    }
  }
  std::remove(model.c_str());
}

TEST_CASE("1F1B warm-up: stage s runs p-s-1 forwards before its first backward")
{
  const auto ops = stage_schedule(PipelineSchedule::OneFOneB, 0, 4, 8);
  REQUIRE(ops.size() == 16);
  CHECK_FALSE(ops[0].first);
  CHECK_FALSE(ops[2].first);
  CHECK_FALSE(ops[3].first);
  CHECK(ops[4].first);
  CHECK(ops[4].second == 0);
}

TEST_CASE("ResNet-50 on 2 GPUs: naive split slower than one GPU, pipelining faster than the naive split")
{
  auto doc = scenario("resnet50", 2, 1, "gpipe");
  doc["training"]["compute"] = {{"single_gpu_throughput", 100}};
  doc["training"]["batch_per_gpu"] = 120;
  const auto naive = predict(parse_scenario(doc, "t.json")).result;
  CHECK(naive.speedup_vs_1gpu < 1.0);
  doc["strategy"]["microbatches"] = 6;
  const auto piped = predict(parse_scenario(doc, "t.json")).result;
  CHECK(piped.iteration_time_s < naive.iteration_time_s * 0.75);
}

TEST_CASE("automatic balance cuts only between blocks")
{
  const Model m = load_model("resnet50");
  std::vector<double> cost;
  for (const auto& l : m.layers)
    cost.push_back(l.fwd_flops);
  const nlohmann::json doc = nlohmann::json::object();
  const auto ranges = partition_balanced(m, cost, 4, JsonReader(doc, "t.json"));
  REQUIRE(ranges.size() == 4);
  CHECK(ranges.front().first == 0);
  CHECK(ranges.back().last == m.layers.size());
  for (std::size_t s = 0; s + 1 < ranges.size(); ++s) {
    CHECK(ranges[s].last == ranges[s + 1].first);
    CHECK(m.cut_allowed_after(ranges[s].last - 1));
  }
}
