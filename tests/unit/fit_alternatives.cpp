// The fits verdict's alternatives (sim/predict/fit_alternatives.hpp): each change is planned, so what
// the verdict says fits is what dtsim then says of that scenario; the largest micro-batch is the
// largest that fits.
#include "sim/predict/fit_alternatives.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace dtsim;

namespace {

const std::string kFile = std::string(DTSIM_TESTS_DIR) + "/data/scenarios/inline_llama_ddp.json";

Scenario scenario(std::vector<std::string> sets)
{
  std::vector<Override> overrides;
  for (const auto& s : sets)
    overrides.push_back(parse_override(s));
  return load_scenario(kFile, overrides);
}

const FitAlternative* find(const std::vector<FitAlternative>& all, const std::string& first_set)
{
  const auto it = std::find_if(all.begin(), all.end(), [&](const FitAlternative& a) { return a.sets.front() == first_set; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("a DDP replica too big for its GPUs: sharding fits, and the largest micro-batch that fits is the largest")
{
  // Llama 3.2 1B-shaped at micro-batch 12 per GPU on 8 H100 (80 GiB): the activations and the
  // fp32 logits do not fit.
  const Scenario s = scenario({"training.micro_batch=12", "training.global_batch=96"});
  REQUIRE_FALSE(planned_memory(s).fits);
  const auto all = fit_alternatives(s);
  REQUIRE_FALSE(all.empty());
  for (const auto& a : all) {  // each as dtsim plans it with its --set arguments
    std::vector<std::string> sets = {"training.micro_batch=12", "training.global_batch=96"};
    sets.insert(sets.end(), a.sets.begin(), a.sets.end());
    const PlannedMemory m = planned_memory(scenario(sets));
    CHECK(m.fits == a.fits);
    CHECK(m.device_bytes == doctest::Approx(a.device_bytes));
  }
  // The global batch of 96 over 8 replicas: the micro-batch divides 12.
  const FitAlternative* batch = nullptr;
  for (const auto& a : all)
    if (a.sets.front().rfind("training.micro_batch=", 0) == 0)
      batch = &a;
  REQUIRE(batch != nullptr);
  REQUIRE(batch->fits);
  const int k = std::stoi(batch->sets.front().substr(std::string("training.micro_batch=").size()));
  CHECK(12 % k == 0);
  for (int larger = k + 1; larger < 12; ++larger)
    if (12 % larger == 0)
      CHECK_FALSE(planned_memory(scenario({"training.global_batch=96", "training.micro_batch=" + std::to_string(larger)})).fits);
  // ZeRO-3 holds 1/8 of the states a DDP replica holds.
  const auto* zero3 = find(all, R"(strategy={"kind":"zero","stage":3})");
  REQUIRE(zero3 != nullptr);
  CHECK(zero3->device_bytes < planned_memory(s).device_bytes);
}

TEST_CASE("one GPU: nothing to shard over, so no sharding is offered; a strategy's own next step is")
{
  const auto one = fit_alternatives(scenario({"gpus=1", R"(strategy={"kind":"single"})", "training.batch_per_gpu=24"}));
  CHECK(find(one, R"(strategy={"kind":"fsdp"})") == nullptr);
  CHECK(find(one, R"(strategy={"kind":"zero","stage":3})") == nullptr);
  CHECK(find(one, R"(strategy={"kind":"zero","stage":2,"offload_optimizer":{"device":"cpu"}})") != nullptr);
  // ZeRO-2 is told of stage 3, not of itself.
  const auto zero2 = fit_alternatives(scenario({R"(strategy={"kind":"zero","stage":2})", "training.batch_per_gpu=24"}));
  CHECK(find(zero2, "strategy.stage=3") != nullptr);
  CHECK(find(zero2, R"(strategy={"kind":"zero","stage":2})") == nullptr);
}

TEST_CASE("a pipeline split by strategy.microbatches: the fewest micro-batches that fit, and the largest batch")
{
  // 512 samples per replica in 4 micro-batches of 128 on a 1F1B pipeline of 8 stages: too big.
  const std::vector<std::string> base = {R"(strategy={"kind":"pipeline","microbatches":4,"schedule":"1f1b"})",
                                         "training.batch_per_gpu=512"};
  const auto all = fit_alternatives(scenario(base));
  const FitAlternative* split = nullptr;
  for (const auto& a : all)
    if (a.sets.front().rfind("strategy.microbatches=", 0) == 0)
      split = &a;
  REQUIRE(split != nullptr);
  REQUIRE(split->fits);
  const int k = std::stoi(split->sets.front().substr(std::string("strategy.microbatches=").size()));
  CHECK(k > 4);
  auto fewer = base;
  fewer.push_back("strategy.microbatches=" + std::to_string(k - 1));
  CHECK_FALSE(planned_memory(scenario(fewer)).fits);
  // The replica's batch itself, at least one sample per micro-batch.
  const auto* batch = find(all, "training.batch_per_gpu=1");
  CHECK(batch == nullptr);
  CHECK(std::any_of(all.begin(), all.end(), [](const FitAlternative& a) {
    return a.fits && a.sets.front().rfind("training.batch_per_gpu=", 0) == 0;
  }));
}

TEST_CASE("ZeRO on one GPU: no stage 3 offered (nothing to partition over), the optimizer on the host is")
{
  const auto one = fit_alternatives(scenario({"gpus=1", R"(strategy={"kind":"zero","stage":1})", "training.batch_per_gpu=32"}));
  CHECK(find(one, "strategy.stage=3") == nullptr);
  CHECK(find(one, R"(strategy.offload_optimizer={"device":"cpu"})") != nullptr);
}
