// FSDP's CPU offload (fsdp_cpu_offload.hpp): the shards copied in before every AllGather, the
// gradient shards copied out after every reduction, the optimizer on the host's cores with the GPU
// idle, nothing of the shards' state left on the GPU; torch.optim's CPU passes in closed form; the
// inputs PyTorch refuses or that dtsim does not model, refused at their pointer.
#include "sim/model/model.hpp"
#include "sim/predict/predict.hpp"
#include "sim/strategies/fsdp_cpu_offload.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/zero_offload.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"

#include "plan_comm.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace dtsim;
using dtsim::testing::comm_of;

namespace {

/// GPT-2 (fp32 shards, bf16 gathers, fp32 reductions) on one HGX H100 node's 8 GPUs, Adam.
nlohmann::json gpt2_fsdp(const nlohmann::json& extra, int accumulation = 1)
{
  nlohmann::json strategy = {{"kind", "fsdp"}, {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "fp32"}}}};
  strategy.update(extra);
  return {{"cluster", {{"base", "hgx-h100"}, {"nodes", 1}}},
          {"model", "gpt2"},
          {"training",
           {{"dataset_samples", 100000}, {"micro_batch", 4}, {"global_batch", 4 * 8 * accumulation}, {"epochs", 1},
            {"precision", "bf16"}, {"optimizer", "adam"}, {"compute", {{"efficiency", 0.4}}}}},
          {"strategy", strategy},
          {"gpus", 8},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

std::string error_of(const nlohmann::json& scenario)
{
  try {
    plan_scenario(parse_scenario(scenario, "s.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("torch.optim's step on CPU tensors: its passes over host memory, element by element")
{
  // _single_tensor_adam: lerp_ 3, mul_ 2, addcmul_ 3, sqrt 2, div 2, add_ 2, addcdiv_ 4 (reads and
  // writes of one element each); AdamW's decoupled decay adds param.mul_'s 2.
  CHECK(torch_cpu_step_bytes_per_element("adam", 4) == 72);
  CHECK(torch_cpu_step_bytes_per_element("adamw", 4) == 80);
  CHECK(torch_cpu_step_bytes_per_element("adamw-foreach", 4) == 80);  // foreach falls back to the loop on CPU
  CHECK(torch_cpu_step_bytes_per_element("adamw-for-loop", 2) == 40);
  CHECK(torch_cpu_step_bytes_per_element("adamw-fused", 4) == 28);    // one pass: 4 read, 3 written
  CHECK(torch_cpu_step_bytes_per_element("sgd", 4) == 32);
  CHECK(torch_cpu_step_bytes_per_element("sgd-fused", 4) == 20);
  CHECK(torch_cpu_step_bytes_per_element("sgd-plain", 4) == 12);
  CHECK(fsdp_offload_host_bytes_per_element(4, 8) == 16);  // fp32 shard, gradient, Adam's two moments
  CHECK(fsdp_offload_host_bytes_per_element(2, 8) == 8);   // bf16 module: the moments are bf16 too
}

TEST_CASE("FSDP CPU offload: shards in before each AllGather, gradient shards out, the step on the host, no state on the GPU")
{
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  const double root = shard_units(gpt2).units.front().params;
  const Topology h100 = load_topology("hgx-h100");
  for (const int version : {1, 2}) {
    CAPTURE(version);
    const Plan plain = plan_scenario(parse_scenario(gpt2_fsdp({{"version", version}}), "s.json")).plan;
    const Plan p = plan_scenario(parse_scenario(gpt2_fsdp({{"version", version}, {"cpu_offload", true}}), "s.json")).plan;
    auto c = comm_of(p);
    // fp32 shards of 1/8: every unit before its forward AllGather, all but the root before its backward one.
    CHECK(c["parameter shards (CPU offload) host -> GPU"].bytes == doctest::Approx((P + P - root) / 8 * 4));
    CHECK(c["gradient shards (CPU offload) GPU -> host"].bytes == doctest::Approx(P / 8 * 4));
    CHECK(comm_of(plain).count("gradient shards (CPU offload) GPU -> host") == 0);
    // The step: a delay (the GPU idles), the node's 8 processes at one thread each (torchrun), Adam's 72
    // bytes per fp32 element at one core's 10 GB/s.
    const double step_s = P / 8 * 72 * 8 / (8 * 10e9);
    CHECK(cpu_step_seconds(P / 8, 72, 8, 1, h100.host) == doctest::Approx(step_s));
    int host_steps = 0, copies_in = 0;
    for (const auto& t : p.graph.tasks()) {
      if (t.iteration != 1)
        continue;
      if (t.category == TaskCategory::Optimizer && t.device == p.ranks[0]) {
        CHECK(t.kind == TaskKind::Delay);
        CHECK(t.seconds == doctest::Approx(step_s));
        ++host_steps;
      }
      if (t.category == TaskCategory::Offload && t.kind == TaskKind::Transfer && t.dst == p.ranks[0]) {
        CHECK(h100.device(t.src).kind == DeviceKind::Cpu);
        ++copies_in;
      }
    }
    CHECK(host_steps == 1);
    CHECK(copies_in == 2 * static_cast<int>(shard_units(gpt2).units.size()) - 1);
    // The GPU keeps no shard, gradient shard or optimizer state; the step's time is not GPU compute.
    for (const auto& m : p.memory_curve) {
      CHECK(m.weights == 0);
      CHECK(m.optimizer == 0);
      CHECK(m.grads == 0);
    }
    CHECK(p.memory.front().total() < plain.memory.front().total());
    CHECK(p.compute_per_iteration_s < plain.compute_per_iteration_s);
  }
  // Run: the host's step is named apart from the communication, and lengthens the iteration by about itself.
  const RunResult plain = predict(parse_scenario(gpt2_fsdp(nlohmann::json::object()), "s.json")).result;
  const RunResult off = predict(parse_scenario(gpt2_fsdp({{"cpu_offload", true}}), "s.json")).result;
  const double step_s = P / 8 * 72 / 10e9;
  CHECK(plain.host_step_s == 0);
  CHECK(off.host_step_s == doctest::Approx(step_s).epsilon(0.01));
  CHECK(off.exposed_comm_time_s < 0.1 * off.host_step_s);
  CHECK(off.iteration_time_s > plain.iteration_time_s + 0.9 * step_s);
}

TEST_CASE("FSDP2 CPU offload over micro-steps: a later micro-step's gradient copy is synchronous and added on the host")
{
  const Model gpt2 = load_model("gpt2");
  const auto units = static_cast<int>(shard_units(gpt2).units.size());
  const auto adds_of = [](const Plan& p) {
    int adds = 0;
    for (const auto& t : p.graph.tasks())
      adds += t.iteration == 1 && t.device == p.ranks[0] && t.category == TaskCategory::Optimizer && t.kind == TaskKind::Delay &&
              t.name.get().starts_with("add ");
    return adds;
  };
  const Plan two = plan_scenario(parse_scenario(gpt2_fsdp({{"cpu_offload", true}}, 2), "s.json")).plan;
  CHECK(adds_of(two) == units);  // the second micro-step's, one per unit
  CHECK(comm_of(two)["gradient shards (CPU offload) GPU -> host"].calls == 2 * units);
  // With no_sync only the last micro-step reduces and copies: nothing to add to.
  const Plan quiet = plan_scenario(parse_scenario(gpt2_fsdp({{"cpu_offload", true}, {"no_sync", true}}, 2), "s.json")).plan;
  CHECK(adds_of(quiet) == 0);
  CHECK(comm_of(quiet)["gradient shards (CPU offload) GPU -> host"].calls == units);
  // Synchronous copies hold the host: the same work takes longer than with no_sync.
  const RunResult sync = predict(parse_scenario(gpt2_fsdp({{"cpu_offload", true}}, 2), "s.json")).result;
  CHECK(sync.iteration_time_s > predict(parse_scenario(gpt2_fsdp({{"cpu_offload", true}, {"no_sync", true}}, 2), "s.json")).result.iteration_time_s);
}

TEST_CASE("FSDP CPU offload: what PyTorch refuses or dtsim does not model exits 2 at its pointer")
{
  CHECK(error_of(gpt2_fsdp({{"cpu_offload", "yes"}})).find("at /strategy/cpu_offload: expected true, false or an object") !=
        std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"cpu_offload", {{"pin_memry", true}}}})).find("at /strategy/cpu_offload/pin_memry") != std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"version", 1}, {"cpu_offload", {{"pin_memory", false}}}}))
            .find("at /strategy/cpu_offload/pin_memory: expected no pin_memory with FSDP version 1") != std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"cpu_offload", {{"omp_num_threads", 0}}}})).find("at /strategy/cpu_offload/omp_num_threads") !=
        std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"sharding", "no_shard"}, {"cpu_offload", true}}))
            .find("at /strategy/cpu_offload: expected cpu_offload only with parameters sharded over more than one rank") !=
        std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"version", 1}, {"cpu_offload", true}}, 2))
            .find("at /strategy/cpu_offload: expected no_sync true with cpu_offload in FSDP version 1 over 2 micro-steps") !=
        std::string::npos);
  CHECK(error_of(gpt2_fsdp({{"version", 1}, {"cpu_offload", true}, {"no_sync", true}}, 2)).empty());
  nlohmann::json no_host = gpt2_fsdp({{"cpu_offload", true}});
  no_host["cluster"] = {{"base", "pcie-box"}};
  no_host["gpus"] = 2;
  no_host["training"]["global_batch"] = 8;
  CHECK(error_of(no_host).find("at /strategy/cpu_offload: expected a cluster whose host gives memory_gbytes_per_s_per_socket") !=
        std::string::npos);
  // false is no offload, and an empty object the defaults.
  CHECK(error_of(gpt2_fsdp({{"cpu_offload", false}})).empty());
  CHECK(error_of(gpt2_fsdp({{"cpu_offload", nlohmann::json::object()}})).empty());
}

TEST_CASE("Offloaded state against the host's DRAM: per node, every process's share, part of the fits verdict")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  // FSDP: each of the node's 8 processes holds 1/8 of the fp32 weights, gradients and Adam's two moments.
  const RunResult off = predict(parse_scenario(gpt2_fsdp({{"cpu_offload", true}}), "s.json")).result;
  CHECK(off.host_offload_bytes == doctest::Approx(P * 16));
  CHECK(off.host_memory_bytes == doctest::Approx(2048.0 * (1ull << 30)));  // hgx-h100: the DGX H100's 2 TB
  CHECK(off.host_memory_fits);
  CHECK(off.memory_fits);
  nlohmann::json small = gpt2_fsdp({{"cpu_offload", true}});
  small["cluster"]["host"] = {{"memory_gib", 1}};
  const RunResult tight = predict(parse_scenario(small, "s.json")).result;
  CHECK_FALSE(tight.host_memory_fits);
  CHECK_FALSE(tight.memory_fits);
  // ZeRO-Offload's stage 3 partition: fp32 weights, Adam's states and fp32 gradients (zero_offload.hpp).
  nlohmann::json zero = gpt2_fsdp(nlohmann::json::object());
  zero["strategy"] = {{"kind", "zero"}, {"stage", 3}, {"offload_optimizer", {{"device", "cpu"}}}};
  const RunResult z = predict(parse_scenario(zero, "s.json")).result;
  CHECK(z.host_offload_bytes == doctest::Approx(offload_host_bytes(ZeroOptions{.stage = 3, .offload_optimizer = true}, P / 8, 8, 2, 2, 1) * 8));
  // Nothing offloaded, nothing told.
  CHECK(predict(parse_scenario(gpt2_fsdp(nlohmann::json::object()), "s.json")).result.host_offload_bytes == 0);
}
