// DataParallel and DDP: DP on one GPU is single-GPU training, DDP on one GPU communicates nothing,
// DP is slower than DDP on the same machine with GPU0 as the hub, DP refuses more than one node,
// and the memory estimate says when a model does not fit.
#include "sim/predict/predict.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

namespace {

nlohmann::json scenario(const std::string& kind, int gpus, const std::string& model = "resnet50")
{
  return {{"cluster", "dgx1-v100"},
          {"model", model},
          {"training",
           {{"dataset_samples", 1281167}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "fp32"},
            {"compute", {{"single_gpu_throughput", 360}}}, {"loader", {{"dataset", "synthetic"}}}}},
          {"strategy", {{"kind", kind}}},
          {"gpus", gpus},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

Prediction run(const nlohmann::json& doc)
{
  return predict(parse_scenario(doc, "test.json"));
}

int transfers(const Plan& plan)
{
  int n = 0;
  for (const auto& t : plan.graph.tasks())
    n += t.kind == TaskKind::Transfer ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("DP and DDP on one GPU equal single-GPU training, with no communication")
{
  const auto single = run(scenario("single", 1));
  const auto dp = run(scenario("dp", 1));
  const auto ddp = run(scenario("ddp", 1));
  const double step = 64.0 / 360.0;  // the measured single-GPU step
  CHECK(single.result.iteration_time_s == doctest::Approx(step).epsilon(1e-9));
  CHECK(dp.result.iteration_time_s == doctest::Approx(step).epsilon(1e-9));
  CHECK(ddp.result.iteration_time_s == doctest::Approx(step).epsilon(1e-9));
  CHECK(transfers(dp.plan) == 0);
  CHECK(transfers(ddp.plan) == 0);
  CHECK(ddp.result.comm_time_s == 0.0);
  CHECK(dp.result.speedup_vs_1gpu == doctest::Approx(1.0));
}

TEST_CASE("DP on 4 GPUs is slower than DDP, and GPU0 is the hub")
{
  auto with_loader = [](nlohmann::json doc) {
    doc["training"]["loader"] = {{"workers", 16}, {"per_sample_ms", 2}};
    return doc;
  };
  const auto dp = run(with_loader(scenario("dp", 4)));
  const auto ddp = run(with_loader(scenario("ddp", 4)));
  CHECK(dp.result.iteration_time_s > ddp.result.iteration_time_s * 1.01);
  const auto& gpus = dp.result.per_gpu;
  REQUIRE(gpus.size() == 4);
  // GPU0 receives the whole batch from the host; the others only their chunk from GPU0.
  const double chunk = 64.0 * 3 * 224 * 224 * 4;
  CHECK(gpus[0].bytes_received >= 4 * chunk);
  // The optimizer state lives on GPU0 only.
  REQUIRE(dp.result.memory.size() == 2);
  CHECK(dp.result.memory[0].memory.optimizer == doctest::Approx(25'557'032.0 * 4));
  CHECK(dp.result.memory[1].memory.optimizer == 0.0);
}

TEST_CASE("DP input-bound: one DataLoader for all GPUs")
{
  auto doc = scenario("dp", 4);
  doc["training"]["loader"] = {{"workers", 2}, {"per_sample_ms", 4}};
  const auto dp = run(doc);
  // 256 samples x 4 ms / 2 workers = 512 ms per iteration, far above the 178 ms of compute.
  CHECK(dp.result.iteration_time_s == doctest::Approx(0.512).epsilon(0.02));
}

TEST_CASE("DDP with workers 0: the main process loads between steps, all of it is waiting for input")
{
  auto doc = scenario("ddp", 4);
  doc["training"]["loader"] = {{"workers", 0}, {"per_sample_ms", 2}};
  const auto r = run(doc).result;
  CHECK(r.input_wait_s == doctest::Approx(r.input_time_s).epsilon(0.001));
  CHECK(r.exposed_comm_time_s <= r.comm_time_s + 1e-9);
  CHECK(r.iteration_time_s == doctest::Approx(r.compute_time_s + r.straggler_wait_s + r.input_wait_s +
                                              r.exposed_comm_time_s + r.host_step_s));
}

TEST_CASE("DP is one node only")
{
  auto doc = scenario("dp", 16);
  doc["cluster"] = {{"base", "dgx1-v100"}, {"nodes", 2}};
  CHECK_THROWS_AS(run(doc), InputError);
}

TEST_CASE("memory: GPT-3 175B does not fit one H100 under DDP; ResNet-50 fits a V100")
{
  auto doc = scenario("ddp", 1, "gpt3-175b");
  doc["cluster"] = "hgx-h100";
  doc["training"]["batch_per_gpu"] = 1;
  doc["training"]["optimizer"] = "adam";
  doc["training"]["precision"] = "bf16";
  const auto gpt = run(doc);
  CHECK_FALSE(gpt.result.memory_fits);
  // 16 bytes per parameter held (bf16 weights + fp32 master, bf16 grads, two fp32 Adam moments),
  // and at the peak, in the optimizer step, foreach Adam's fp32 temporaries (4 more; memory_timeline.cpp).
  CHECK(gpt.result.memory[0].memory.peak_at == "the optimizer step");
  CHECK(gpt.result.memory[0].memory.params + gpt.result.memory[0].memory.grads + gpt.result.memory[0].memory.optimizer ==
        doctest::Approx(20.0 * static_cast<double>(gpt.result.params)));
  CHECK(run(scenario("ddp", 1)).result.memory_fits);
}
