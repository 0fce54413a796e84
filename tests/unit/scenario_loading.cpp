// Scenario parsing, its errors (file + JSON pointer + what was expected) and --set overrides.
#include "sim/scenario/scenario.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

using namespace dtsim;
using nlohmann::json;

namespace {

json base()
{
  return json::parse(R"({
    "name": "t", "cluster": {"base": "dgx1-v100"}, "model": "resnet50",
    "training": {"dataset_samples": 1281167, "batch_per_gpu": 128, "epochs": 100, "precision": "fp32",
                 "compute": {"step_time_s": 7.2}},
    "strategy": {"kind": "ddp"}, "gpus": 32 })");
}

std::string error_of(json doc)
{
  try {
    parse_scenario(std::move(doc), "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a valid scenario parses")
{
  const Scenario s = parse_scenario(base(), "s.json");
  CHECK(s.gpus == 32);
  CHECK(s.model == "resnet50");
  CHECK(s.training.batch_per_gpu == 128);
  CHECK(s.training.compute.source == ComputeSpec::Source::StepTime);
  CHECK(s.training.compute.step_time_s == doctest::Approx(7.2));
  CHECK(s.strategy == "ddp");
}

TEST_CASE("errors name the file, the JSON pointer and what was expected")
{
  json d = base();
  d["training"]["batch_per_gpu"] = -3;
  CHECK(error_of(d) == "s.json: at /training/batch_per_gpu: expected a positive integer, got -3");

  d = base();
  d["gpus"] = 0;
  CHECK(error_of(d) == "s.json: at /gpus: expected a positive integer, got 0");

  d = base();
  d["training"].erase("epochs");
  CHECK(error_of(d) == "s.json: at /training: missing member \"epochs\"");

  d = base();
  d["training"]["compute"] = json::object();
  CHECK(error_of(d).find("s.json: at /training/compute: expected exactly one of") == 0);

  d = base();
  d["strategy"]["kind"] = "horovod";
  CHECK(error_of(d).find("s.json: at /strategy/kind: expected one of ddp, dp") == 0);

  d = base();
  d["trainig"] = 1;
  CHECK(error_of(d).find("s.json: at /trainig: unknown member \"trainig\"") == 0);
}

TEST_CASE("--set overrides any field, and a compute source replaces the others")
{
  json d = base();
  apply_overrides(d, {parse_override("training.compute.single_gpu_throughput=367"), parse_override("gpus=8"),
                      parse_override("strategy.kind=ddp"), parse_override("name=renamed")});
  const Scenario s = parse_scenario(d, "s.json");
  CHECK(s.training.compute.source == ComputeSpec::Source::Throughput);
  CHECK(s.training.compute.single_gpu_throughput == doctest::Approx(367));
  CHECK_FALSE(d["training"]["compute"].contains("step_time_s"));
  CHECK(s.gpus == 8);
  CHECK(s.name == "renamed");

  apply_overrides(d, {parse_override("training.compute.gpu=V100-SXM2"), parse_override("training.compute.efficiency=0.45")});
  CHECK(d["training"]["compute"] == json::parse(R"({"gpu": "V100-SXM2", "efficiency": 0.45})"));

  apply_overrides(d, {parse_override("cluster.nic={\"count_per_node\": 2, \"gbps\": 200}")});
  CHECK(d["cluster"]["nic"]["gbps"] == 200);

  apply_overrides(d, {parse_override("cluster.nic=null")});
  CHECK_FALSE(d["cluster"].contains("nic"));
}

TEST_CASE("override_replaces: the overrides that apply_overrides undoes, as sweep refuses them together")
{
  CHECK(override_replaces("gpus", "gpus"));
  CHECK(override_replaces("training.compute", "training.compute.step_time_s"));  // a member holding it
  CHECK_FALSE(override_replaces("training.compute.step_time_s", "training.compute"));  // sets within it
  CHECK(override_replaces("training.micro_batch", "training.batch_per_gpu"));
  CHECK(override_replaces("training.batch_per_gpu", "training.global_batch"));
  CHECK_FALSE(override_replaces("training.micro_batch", "training.global_batch"));  // one way of giving the batch
  CHECK(override_replaces("training.compute.step_time_s", "training.compute.single_gpu_throughput"));
  CHECK(override_replaces("training.compute.profile", "training.compute.efficiency"));
  CHECK_FALSE(override_replaces("training.compute.gpu", "training.compute.efficiency"));
  CHECK_FALSE(override_replaces("training.compute.jitter_cv", "training.compute.step_time_s"));
  CHECK_FALSE(override_replaces("gpus", "cluster.nodes"));
  CHECK_FALSE(override_replaces("cluster.nic.gbps", "cluster.nodes"));
  // Each pair it names is one apply_overrides keeps only the later of.
  json d = base();
  apply_overrides(d, {parse_override("training.compute.single_gpu_throughput=300"),
                      parse_override("training.compute.step_time_s=1")});
  CHECK_FALSE(d["training"]["compute"].contains("single_gpu_throughput"));
}

TEST_CASE("A scenario's name is text: control characters are refused at /name")
{
  json d = base();
  d["name"] = "a\x1b[31mb";
  CHECK(error_of(d).find("s.json: at /name: expected a name without control characters") == 0);
  d["name"] = "a\nb";
  CHECK(error_of(d).find("s.json: at /name: ") == 0);
}

TEST_CASE("reference_compute.single_gpu_throughput takes training.compute.single_gpu_throughput's range")
{
  json d = base();
  d["reference_compute"] = {{"single_gpu_throughput", 1e-7}, {"source", "x"}};
  CHECK(error_of(d).find("s.json: at /reference_compute/single_gpu_throughput: expected a number from 1e-06 to 1e+09") == 0);
  d["reference_compute"]["single_gpu_throughput"] = 373.21;
  CHECK(parse_scenario(d, "s.json").reference_throughput == doctest::Approx(373.21));
}

TEST_CASE("--set paths are JSON pointers: escaped keys, array indices, \"-\" appends")
{
  json d = base();
  d["strategy"]["balance"] = json::array({3, 3, 2});
  apply_overrides(d, {parse_override("strategy.balance.1=4"), parse_override("strategy.balance.-=1")});
  CHECK(d["strategy"]["balance"] == json::parse("[3, 4, 2, 1]"));
  apply_overrides(d, {parse_override("strategy.balance.0=null")});  // null removes the element
  CHECK(d["strategy"]["balance"] == json::parse("[4, 2, 1]"));

  // Keys with "/" and "~" are one reference token each (escaped ~1 and ~0 in the pointer).
  d = base();
  apply_overrides(d, {parse_override("training.a/b~c=1")});
  CHECK(d["training"]["a/b~c"] == 1);
  CHECK(error_of(d).find("s.json: at /training/a~1b~0c: unknown member \"a/b~c\"") == 0);

  const auto set_error = [](json doc, const std::string& text) -> std::string {
    try {
      apply_overrides(doc, {parse_override(text)});
    } catch (const InputError& e) {
      CHECK(e.file() == "--set");
      return e.what();
    }
    FAIL("expected an InputError for --set " << text);
    return {};
  };
  d = base();
  d["strategy"]["balance"] = json::array({3, 3});
  CHECK(set_error(d, "strategy.balance.2=1").find("--set: at /strategy/balance: cannot set strategy.balance.2: "
                                                  "\"2\" is not an element of the array of 2 (expected an index 0 to 1 "
                                                  "or \"-\" (appends))") == 0);
  CHECK(set_error(d, "strategy.balance.01=1").find("\"01\" is not an element") != std::string::npos);
  CHECK(set_error(d, "strategy.balance.x=1").find("\"x\" is not an element") != std::string::npos);
  CHECK(set_error(d, "strategy.balance.18446744073709551616=1").find("is not an element") != std::string::npos);
  CHECK(set_error(d, "strategy.balance.-=null").find("\"-\" names a new element, there is none to remove") !=
        std::string::npos);
  CHECK(set_error(d, "strategy.balance.-.x=1").find("\"-\" (a new element) may only end the path") !=
        std::string::npos);
  CHECK(set_error(d, "strategy.kind.0=1").find("--set: at /strategy/kind: cannot set strategy.kind.0: its parent is the "
                                               "string \"ddp\"") == 0);
  CHECK(set_error(d, "strategy.kind.a.b=1").find("--set: at /strategy/kind: cannot set strategy.kind.a.b: the value at "
                                                 "/strategy/kind is the string \"ddp\"") == 0);
}

TEST_CASE("malformed --set is bad input")
{
  CHECK_THROWS_AS(parse_override("gpus"), InputError);
  CHECK_THROWS_AS(parse_override("training..epochs=3"), InputError);
  json d = base();
  CHECK_THROWS_AS(apply_overrides(d, {parse_override("gpus.count=3")}), InputError);
}

TEST_CASE("the batch in Megatron's words: micro_batch, global_batch and the accumulation they imply")
{
  // DDP on 32 GPUs: 32 x micro 4 x 8 steps = 1024.
  json d = base();
  d["training"].erase("batch_per_gpu");
  d["training"]["micro_batch"] = 4;
  d["training"]["global_batch"] = 1024;
  Scenario s = parse_scenario(d, "s.json");
  CHECK(s.training.batch.accumulation == 8);
  CHECK(s.training.batch.global_batch == 1024);
  CHECK(s.training.batch_per_gpu == 4);  // per GPU and micro-step, as batch_per_gpu means for ddp
  CHECK(s.training.batch.measured_at == 4);
  CHECK(s.strategy_spec.data == 32);

  // micro_batch alone: no accumulation unless the strategy says so.
  d["training"].erase("global_batch");
  d["strategy"]["gradient_accumulation"] = 3;
  s = parse_scenario(d, "s.json");
  CHECK(s.training.batch.accumulation == 3);
  CHECK(s.training.batch.global_batch == 4 * 32 * 3);

  // Megatron's hybrid: tp 8 x pp 2 on 32 GPUs leaves 2 replicas; global 64 at micro 2 is 16 micro-batches.
  d = base();
  d["training"].erase("batch_per_gpu");
  d["training"]["micro_batch"] = 2;
  d["training"]["global_batch"] = 64;
  d["strategy"] = {{"kind", "hybrid"}, {"tensor_parallel", 8}, {"pipeline_stages", 2}};
  s = parse_scenario(d, "s.json");
  CHECK(s.strategy_spec.kind == StrategyKind::Hybrid);
  CHECK(s.strategy_spec.data == 2);
  CHECK(s.training.batch.accumulation == 16);
  CHECK(s.training.batch_per_gpu == 32);  // a replica's batch, as batch_per_gpu means for hybrid
  CHECK(s.training.batch.measured_at == 2);

  // The older spelling keeps its meaning: a hybrid's batch_per_gpu is one replica's batch.
  d = base();
  d["strategy"] = {{"kind", "hybrid"}, {"pipeline_stages", 2}, {"microbatches", 4}};
  s = parse_scenario(d, "s.json");
  CHECK(!s.training.batch.given_as_micro);
  CHECK(s.training.batch.micro_batch == doctest::Approx(32));
  CHECK(s.training.batch.global_batch == 128 * 16);
  CHECK(s.training.batch.measured_at == 128);
}

TEST_CASE("batch numbers that do not divide name both fields")
{
  json d = base();
  d["training"].erase("batch_per_gpu");
  d["training"]["micro_batch"] = 4;
  d["training"]["global_batch"] = 1000;
  CHECK(error_of(d) == "s.json: at /training/global_batch: expected a multiple of training.micro_batch x data-parallel "
                       "replicas = 4 x 32 = 128, got 1000");
  d["training"]["global_batch"] = 256;
  d["strategy"]["gradient_accumulation"] = 4;
  CHECK(error_of(d).find("s.json: at /strategy/gradient_accumulation: expected 2 = training.global_batch") == 0);
  d = base();
  d["training"]["micro_batch"] = 4;
  CHECK(error_of(d).find("s.json: at /training/micro_batch: expected either training.micro_batch or "
                         "training.batch_per_gpu") == 0);
}

TEST_CASE("--set of one spelling of the batch removes the other")
{
  json d = base();
  apply_overrides(d, {parse_override("training.micro_batch=4"), parse_override("training.global_batch=256")});
  CHECK(!d["training"].contains("batch_per_gpu"));
  const Scenario s = parse_scenario(d, "s.json");
  CHECK(s.training.batch.accumulation == 2);
  apply_overrides(d, {parse_override("training.batch_per_gpu=64")});
  CHECK(!d["training"].contains("micro_batch"));
  CHECK(!d["training"].contains("global_batch"));
  CHECK(parse_scenario(d, "s.json").training.batch.global_batch == 64 * 32);
}
