// Sharded data parallelism as the plans build it: FSDP's units (one per transformer layer plus the
// root), its AllGathers and ReduceScatters per unit with their bytes, the variants of sharding and
// prefetch, HSDP's second process group, FSDP x TP, and DeepSpeed ZeRO's three stages; the memory
// each keeps (ZeRO paper accounting); bytes on the wire against the ring's closed form.
#include "sim/model/model.hpp"
#include "sim/predict/predict.hpp"
#include "sim/strategies/buckets.hpp"
#include "sim/strategies/fsdp1_grad_passes.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/zero_offload.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/topology/gpu_spec.hpp"
#include "sim/util/input_error.hpp"

#include "plan_comm.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

using namespace dtsim;
using dtsim::testing::comm_of;

namespace {

nlohmann::json gpt2_scenario(const nlohmann::json& strategy, int gpus, int nodes = 1)
{
  return {{"cluster", {{"base", "hgx-h100"}, {"nodes", nodes}}},
          {"model", "gpt2"},
          {"training",
           {{"dataset_samples", 100000}, {"micro_batch", 4}, {"epochs", 1}, {"precision", "bf16"},
            {"optimizer", "adam"}, {"compute", {{"efficiency", 0.4}}}}},
          {"strategy", strategy},
          {"gpus", gpus},
          {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
}

/// Bytes sent in the plan's tensor-parallel transfers, every rank and iteration.
double tp_bytes(const Plan& p)
{
  double b = 0;
  for (const auto& t : p.graph.tasks())
    if (t.category == TaskCategory::TensorParallel && t.kind == TaskKind::Transfer)
      b += t.bytes;
  return b;
}

nlohmann::json fsdp(nlohmann::json extra = nlohmann::json::object())
{
  nlohmann::json s = {{"kind", "fsdp"}, {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "fp32"}}}};
  s.update(extra);
  return s;
}

/// GPT-2 on 8 H100s with `strategy`, 4 micro-steps per iteration.
Plan four_micro_steps_on_8(const nlohmann::json& strategy)
{
  nlohmann::json s = gpt2_scenario(strategy, 8);
  s["training"]["global_batch"] = 4 * 4 * 8;
  return plan_scenario(parse_scenario(s, "s.json")).plan;
}

}  // namespace

TEST_CASE("FSDP units: one per transformer layer, the root holds the rest, every layer in one segment")
{
  const Model gpt2 = load_model("gpt2");
  const ShardUnits su = shard_units(gpt2);
  REQUIRE(su.units.size() == 13);
  CHECK(su.units[0].name == "root");
  CHECK(su.units[1].name == "transformer layer 0");
  double total = 0;
  for (const auto& u : su.units)
    total += u.params;
  CHECK(total == doctest::Approx(static_cast<double>(gpt2.params())));
  std::size_t covered = 0;
  for (const auto& seg : su.segments) {
    CHECK(seg.layers.first == covered);
    covered = seg.layers.last;
  }
  CHECK(covered == gpt2.layers.size());
  // the root's layers sit before and after the transformer layers (embeddings; final norm and head)
  CHECK(su.segments.front().unit == 0);
  CHECK(su.segments.back().unit == 0);
  // a CNN: one unit per ResNet stage
  const ShardUnits resnet = shard_units(load_model("resnet50"));
  REQUIRE(resnet.units.size() == 5);
  CHECK(resnet.units[1].name == "layer1");
  CHECK(resnet.units[4].name == "layer4");
}

TEST_CASE("FSDP full_shard: an AllGather per unit forward and backward, a ReduceScatter per unit, in their dtypes")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const Prediction p = plan_scenario(parse_scenario(gpt2_scenario(fsdp(), 8), "s.json"));
  auto c = comm_of(p.plan);
  CHECK(c["parameters (forward) all_gather"].calls == 13);
  CHECK(c["parameters (forward) all_gather"].bytes == doctest::Approx(P * 2));       // bf16 gathers
  CHECK(c["parameters (backward) all_gather"].calls == 12);                         // not the root
  CHECK(c["gradients reduce_scatter"].calls == 13);
  CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(P * 4));              // fp32 reduction
  // each GPU keeps 1/8 of the fp32 parameters, gradients and Adam states
  const GpuMemory& m = p.plan.memory.front();
  CHECK(m.optimizer == doctest::Approx(P * 8 / 8));

  SUBCASE("shard_grad_op keeps the parameters from forward to backward: no backward AllGather")
  {
    c = comm_of(plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"sharding", "shard_grad_op"}}), 8), "s.json")).plan);
    CHECK(c.count("parameters (backward) all_gather") == 0);
    CHECK(c["gradients reduce_scatter"].calls == 13);
  }
  SUBCASE("reshard_after_forward as an int (version 2): the backward AllGather over that many ranks; 1 is false, "
          "the shard group's size is true")
  {
    const auto plan_with = [](const nlohmann::json& reshard) {
      return plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"version", 2}, {"reshard_after_forward", reshard}}), 16, 2), "s.json")).plan;
    };
    const Plan four = plan_with(4), one = plan_with(1), kept = plan_with(false), all = plan_with(16), freed = plan_with(true);
    CHECK(comm_of(four)["parameters (backward) all_gather"].groups == 4);
    CHECK(comm_of(one).count("parameters (backward) all_gather") == 0);
    CHECK(comm_of(all)["parameters (backward) all_gather"].groups == comm_of(freed)["parameters (backward) all_gather"].groups);
    CHECK(one.memory.front().total() == doctest::Approx(kept.memory.front().total()));
    CHECK(all.memory.front().total() == doctest::Approx(freed.memory.front().total()));
    CHECK(freed.memory.front().total() < four.memory.front().total());
    CHECK(four.memory.front().total() < kept.memory.front().total());
  }
  SUBCASE("no_shard AllReduces each unit's gradients and gathers nothing")
  {
    c = comm_of(plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"sharding", "no_shard"}}), 8), "s.json")).plan);
    CHECK(c.count("parameters (forward) all_gather") == 0);
    CHECK(c["gradients all_reduce"].calls == 13);
  }
  SUBCASE("hybrid_shard: shard groups of one node, the shards AllReduced across the nodes")
  {
    c = comm_of(plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"sharding", "hybrid_shard"}}), 16, 2), "s.json")).plan);
    CHECK(c["parameters (forward) all_gather"].groups == 2);
    CHECK(c["gradient shards across replicas all_reduce"].groups == 8);
    CHECK(c["gradient shards across replicas all_reduce"].bytes == doctest::Approx(P * 4 / 8));
  }
  SUBCASE("fp8 (torchao's float8 all-gather): the blocks' linear weights in one byte, the rest in bf16")
  {
    const Model gpt2 = load_model("gpt2");
    double linear = 0;  // the transformer blocks' linears (the head is tied to the embedding: no params)
    for (const auto& u : shard_units(gpt2).units)
      linear += u.linear_params;
    CHECK(linear > 0.5 * P);
    CHECK(linear < P);
    const Prediction f8 = plan_scenario(parse_scenario(
        gpt2_scenario(fsdp({{"mixed_precision", {{"param_dtype", "fp8"}, {"reduce_dtype", "fp32"}}}}), 8), "s.json"));
    c = comm_of(f8.plan);
    CHECK(c["parameters (forward) all_gather"].bytes == doctest::Approx(linear * 1 + (P - linear) * 2));
    CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(P * 4));
    // Smaller gathered units: under shard_grad_op they are all alive at the peak (the loss's backward,
    // where full_shard has re-sharded every unit but the root).
    const auto peak_of = [](const nlohmann::json& mp) {
      nlohmann::json o = {{"sharding", "shard_grad_op"}};
      if (!mp.is_null())
        o["mixed_precision"] = mp;
      return plan_scenario(parse_scenario(gpt2_scenario(fsdp(o), 8), "s.json")).plan.memory.front().total();
    };
    CHECK(peak_of({{"param_dtype", "fp8"}, {"reduce_dtype", "fp32"}}) < peak_of(nullptr));
    // reduce_dtype defaults to bf16, the policy's param_dtype
    c = comm_of(plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"mixed_precision", {{"param_dtype", "fp8"}}}}), 8), "s.json")).plan);
    CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(P * 2));
  }
  SUBCASE("no_sync with gradient accumulation reduces once per optimizer step")
  {
    nlohmann::json doc = gpt2_scenario(fsdp({{"no_sync", true}}), 8);
    doc["training"]["global_batch"] = 4 * 8 * 3;
    c = comm_of(plan_scenario(parse_scenario(doc, "s.json")).plan);
    CHECK(c["parameters (forward) all_gather"].calls == 13 * 3);
    CHECK(c["gradients reduce_scatter"].calls == 13);
  }
}

TEST_CASE("FSDP x TP: the shard group spans the data ranks of one tensor rank, with Megatron's collectives per layer")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const Prediction p = plan_scenario(parse_scenario(gpt2_scenario(fsdp({{"tensor_parallel", 4}}), 16, 2), "s.json"));
  auto c = comm_of(p.plan);
  CHECK(c["parameters (forward) all_gather"].groups == 4);
  CHECK(c["parameters (forward) all_gather"].bytes == doctest::Approx(P / 4 * 2));
  int tp = 0;
  for (const auto& t : p.plan.graph.tasks())
    tp += t.category == TaskCategory::TensorParallel ? 1 : 0;
  CHECK(tp > 0);
  // The per-step list names the tensor ranks' collectives, one group per data rank, as the
  // Megatron-style hybrid lists the same layers' (they were missing: helper-21).
  REQUIRE(c.count("tensor-parallel all_reduce") == 1);
  CHECK(c["tensor-parallel all_reduce"].groups == 4);
  const Prediction h = plan_scenario(parse_scenario(gpt2_scenario({{"kind", "hybrid"}, {"tensor_parallel", 4}}, 16, 2), "s.json"));
  auto ch = comm_of(h.plan);
  REQUIRE(ch.count("stage 0 tensor-parallel all_reduce") == 1);
  CHECK(c["tensor-parallel all_reduce"].bytes == doctest::Approx(ch["stage 0 tensor-parallel all_reduce"].bytes));
  CHECK(c["tensor-parallel all_reduce"].calls == ch["stage 0 tensor-parallel all_reduce"].calls);

  SUBCASE("replicate_embedding: the token embedding whole in each tensor rank's root (KempnerForge's TP plan)")
  {
    const Model gpt2 = load_model("gpt2");
    const double E = embedding_params(gpt2);
    CHECK(E > 0);
    const Prediction r = plan_scenario(parse_scenario(
        gpt2_scenario(fsdp({{"tensor_parallel", 4}, {"replicate_embedding", true}}), 16, 2), "s.json"));
    auto cr = comm_of(r.plan);
    CHECK(cr["parameters (forward) all_gather"].bytes == doctest::Approx((P / 4 + E * 3 / 4) * 2));
    CHECK(cr["gradients reduce_scatter"].bytes == doctest::Approx((P / 4 + E * 3 / 4) * 4));
    // its shard's fp32 weights and Adam states on each GPU (4 data ranks per shard group)
    CHECK(r.plan.memory.front().optimizer - p.plan.memory.front().optimizer == doctest::Approx(E * 3 / 4 / 4 * 8));
  }
}

TEST_CASE("FSDP's sharded dtype, no_sync's accumulated gradients and a replicated loss, as KempnerForge runs them")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const auto plan_of = [](const nlohmann::json& strategy, int accumulation = 1, const char* loss_dtype = nullptr) {
    nlohmann::json s = gpt2_scenario(strategy, 16, 2);
    s["training"]["global_batch"] = 4 * accumulation * 16 / (strategy.value("tensor_parallel", 1));
    if (loss_dtype)
      s["training"]["loss_dtype"] = loss_dtype;
    return plan_scenario(parse_scenario(s, "s.json")).plan;
  };
  SUBCASE("sharded_dtype bf16: the shard's weights, gradients and Adam states at 2 bytes each, not 4")
  {
    const Plan fp32 = plan_of(fsdp()), bf16 = plan_of(fsdp({{"sharded_dtype", "bf16"}}));
    const GpuMemory &a = fp32.memory.front(), &b = bf16.memory.front();
    CHECK(a.params == doctest::Approx(P / 16 * 4));
    CHECK(b.params == doctest::Approx(P / 16 * 2));
    CHECK(b.optimizer == doctest::Approx(a.optimizer / 2));
    CHECK(b.optimizer == doctest::Approx(P / 16 * 4));
    CHECK(b.total() < a.total());
  }
  SUBCASE("sharded_dtype bf16: the Adam step's temporaries in the states' dtype, 2 bytes, not 4")
  {
    // torch/optim/adam.py _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
    // has the states' dtype; _single_tensor_adam's exp_avg_sq.sqrt() / bias_correction2_sqrt too.
    const auto step_of = [&](const nlohmann::json& strategy, const char* optimizer) {
      nlohmann::json s = gpt2_scenario(strategy, 16, 2);
      s["training"]["global_batch"] = 4 * 16;
      s["training"]["optimizer"] = optimizer;
      const Plan p = plan_scenario(parse_scenario(s, "s.json")).plan;
      REQUIRE(!p.memory_curve.empty());
      CHECK(p.memory_curve.back().at == "the optimizer step");
      return p.memory_curve.back().optimizer;
    };
    const nlohmann::json bf16 = fsdp({{"sharded_dtype", "bf16"}});
    // foreach (PyTorch's default on CUDA): two states and one temporary per element of the shard.
    CHECK(step_of(fsdp(), "adam") == doctest::Approx(P / 16 * (8 + 4)));
    CHECK(step_of(bf16, "adam") == doctest::Approx(P / 16 * (4 + 2)));
    CHECK(step_of(bf16, "adam-fused") == doctest::Approx(P / 16 * 4));
    // The per-tensor loop: two temporaries of the largest tensor's shard.
    const double largest = largest_param_tensor(load_model("gpt2"), 0, load_model("gpt2").layers.size());
    CHECK(step_of(fsdp(), "adam-for-loop") == doctest::Approx(P / 16 * 8 + 2 * largest * 4 / 16));
    CHECK(step_of(bf16, "adam-for-loop") == doctest::Approx(P / 16 * 4 + 2 * largest * 2 / 16));
  }
  SUBCASE("no_sync on FSDP2: every unsharded gradient kept in the reduce dtype, no sharded one at the peak")
  {
    const Plan each = plan_of(fsdp(), 4);
    const Plan fp32 = plan_of(fsdp({{"no_sync", true}}), 4);
    const Plan bf16 = plan_of(fsdp({{"no_sync", true}, {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "bf16"}}}}), 4);
    CHECK(each.memory.front().grads == doctest::Approx(P / 16 * 4));  // the sharded gradients accumulate
    // The accumulated unsharded gradients show as gradients, not as workspace.
    CHECK(fp32.memory.front().grads == doctest::Approx(P * 4).epsilon(0.001));
    CHECK(bf16.memory.front().grads == doctest::Approx(P * 2).epsilon(0.001));
    CHECK(fp32.memory.front().workspace == doctest::Approx(bf16.memory.front().workspace).epsilon(0.001));
    // Reduced by the last micro-step's backward and freed: not alive at the optimizer step.
    bool step_seen = false;
    for (const auto& point : fp32.memory_curve)
      if (point.at == "the optimizer step") {
        step_seen = true;
        CHECK(point.grads < P);
      }
    CHECK(step_seen);
  }
  SUBCASE("a shard group of one rank (tensor parallel only): FSDP2 keeps its buffers, FSDP1 runs as NO_SHARD")
  {
    // KempnerForge's TP-only runs: fully_shard over a dp_shard mesh of size 1 (its distributed/setup.py).
    const auto one_rank = [](int version) {
      nlohmann::json s = gpt2_scenario(fsdp({{"version", version}, {"tensor_parallel", 4}, {"no_sync", true}}), 4);
      s["training"]["global_batch"] = 4 * 4;  // 4 micro-steps of the one data rank
      return plan_scenario(parse_scenario(s, "s.json")).plan;
    };
    const Plan v2 = one_rank(2), v1 = one_rank(1);
    const GpuMemory &a = v2.memory.front(), &b = v1.memory.front();
    // FSDP2: every unsharded gradient kept in fp32 between micro-steps (P / 4 per tensor rank, 4 bytes),
    // beside the gathered units; no sharded gradient at the peak.
    CHECK(a.grads == doctest::Approx(P).epsilon(0.01));
    CHECK(a.workspace - b.workspace < 0.3 * P);
    // FSDP1: a replica whose gradients accumulate in .grad, in the module's dtype.
    CHECK(b.grads == doctest::Approx(P / 4 * 4));
    CHECK(a.total() > b.total());
    // No collective over one rank; FSDP2's copy-out into the unsharded parameters still runs.
    const auto copies = [](const Plan& p) {
      return std::count_if(p.graph.tasks().begin(), p.graph.tasks().end(),
                           [](const auto& t) { return t.category == TaskCategory::FsdpCopy; });
    };
    CHECK(copies(v2) > 0);
    CHECK(copies(v1) == 0);
    for (const Plan* p : {&v2, &v1})
      for (const auto& c : p->comm_per_iteration)
        CHECK(c.op != "all_gather");
  }
  SUBCASE("loss_parallel false: the logits AllGathered in the tensor group each micro-step, the loss on all of them")
  {
    const Plan parallel = plan_of(fsdp({{"tensor_parallel", 4}, {"sequence_parallel", true}}));
    const Plan gathered = plan_of(fsdp({{"tensor_parallel", 4}, {"sequence_parallel", true}, {"loss_parallel", false}}));
    const Model gpt2 = load_model("gpt2");
    const double logits = gpt2.arch.at("vocab") * gpt2.arch.at("seq_len") * 4 /* micro-batch */ * 2 /* bf16 */;
    // Each of the 4 tensor groups' 4 ranks receives at least the other ranks' 3/4 of the logits, in
    // each of the 3 simulated iterations (the three per-token AllReduces it replaces are negligible);
    // NCCL's LL and LL128 protocols send their flags on top, at most as much again.
    const double least = 3 * 4 * 4 * logits * 3 / 4;
    CHECK(tp_bytes(gathered) - tp_bytes(parallel) >= 0.99 * least);
    CHECK(tp_bytes(gathered) - tp_bytes(parallel) <= 2 * least);
    CHECK(gathered.memory.front().activations > parallel.memory.front().activations);
    const Plan half = plan_of(fsdp({{"tensor_parallel", 4}, {"sequence_parallel", true}, {"loss_parallel", false}}), 1, "bf16");
    CHECK(half.memory.front().activations < gathered.memory.front().activations);
  }
}

TEST_CASE("FSDP2's copies: in before each gather, out before forward and backward, gradients into the reduce dtype")
{
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  const GpuSpec& gpu = load_topology("hgx-h100").gpu;
  const int U = static_cast<int>(shard_units(gpt2).units.size());
  const auto plan_of = four_micro_steps_on_8;
  // The first rank's tasks of a category in the second iteration: how many, and their seconds.
  const auto of = [](const Plan& p, TaskCategory c) {
    std::pair<int, double> n{0, 0.0};
    for (const auto& t : p.graph.tasks())
      if (t.category == c && t.iteration == 1 && t.device == p.ranks[0]) {
        CHECK(t.kind == TaskKind::Compute);
        ++n.first;
        n.second += t.seconds;
      }
    return n;
  };
  SUBCASE("no_sync with fp32 reduction: an upcast, then additions, then the copy-in of the last micro-step")
  {
    const Plan p = plan_of(fsdp({{"no_sync", true}}));
    CHECK(of(p, TaskCategory::FsdpCopy).first == U * 4);               // every unit, every forward
    CHECK(of(p, TaskCategory::FsdpCopyBackward).first == (U - 1) * 4);  // the root stays gathered
    const auto [grad_copies, seconds] = of(p, TaskCategory::FsdpGradCopy);
    CHECK(grad_copies == U * 5);  // upcast, 3 additions, the copy-in
    // Per parameter: bf16 read and fp32 written; bf16 and fp32 read, fp32 written (3x); fp32 read and written.
    CHECK(seconds == doctest::Approx(memory_bound_seconds(P * (6 + 3 * 10 + 8), gpu)).epsilon(0.01));
  }
  SUBCASE("every micro-step reduced: the copy-in from the parameters' dtype each time, nothing kept")
  {
    const Plan p = plan_of(fsdp());
    const auto [grad_copies, seconds] = of(p, TaskCategory::FsdpGradCopy);
    CHECK(grad_copies == U * 4);
    CHECK(seconds == doctest::Approx(memory_bound_seconds(P * 6 * 4, gpu)).epsilon(0.01));
    // Before every AllGather (forward: every unit; backward: all but the root) the rank's fp32 shard read
    // and written in bf16 into the gather's input, beside compute.
    const double root = shard_units(load_model("gpt2")).units[0].params;
    const auto [copy_ins, in_seconds] = of(p, TaskCategory::FsdpCopyIn);
    CHECK(copy_ins == (2 * U - 1) * 4);
    CHECK(in_seconds == doctest::Approx(memory_bound_seconds((2 * P - root) / 8 * 6 * 4, gpu)).epsilon(0.01));
  }
  SUBCASE("reshard_after_forward false: no copy-out before backward; FSDP1 copies none of these")
  {
    CHECK(of(plan_of(fsdp({{"reshard_after_forward", false}})), TaskCategory::FsdpCopyBackward).first == 0);
    const Plan v1 = plan_of(fsdp({{"version", 1}, {"no_sync", true}}));
    for (const TaskCategory c : {TaskCategory::FsdpCopy, TaskCategory::FsdpCopyBackward, TaskCategory::FsdpGradCopy})
      CHECK(of(v1, c).first == 0);
  }
  SUBCASE("FSDP1 casts each fp32 shard to bf16 before its AllGather (its _mp_shard), and only with a param_dtype")
  {
    const double root = shard_units(load_model("gpt2")).units[0].params;
    const auto [casts, seconds] = of(plan_of(fsdp({{"version", 1}, {"no_sync", true}})), TaskCategory::FsdpCopyIn);
    CHECK(casts == (2 * U - 1) * 4);
    CHECK(seconds == doctest::Approx(memory_bound_seconds((2 * P - root) / 8 * 6 * 4, gpu)).epsilon(0.01));
    // The shards already in the gathered dtype (a module cast to bf16 before wrapping): gathered as they are.
    CHECK(of(plan_of(fsdp({{"version", 1}, {"sharded_dtype", "bf16"}})), TaskCategory::FsdpCopyIn).first == 0);
  }
}

TEST_CASE("FSDP1's cast runs ahead of the rate limiter, FSDP2's copy-in waits for the free event with its AllGather")
{
  // _runtime_utils.py _unshard issues the pre-unshard stream's cast, then waits (on the host) for the free
  // event of the AllGather two units back; FSDP2's all-gather streams both wait for that event. A free
  // event is the last forward (or backward) task of an earlier unit; the root's forward waits for the
  // optimizer step and the previous backward's last tasks, which are neither.
  const auto waits_on_frees = [](int version) {
    const Plan p = four_micro_steps_on_8(fsdp({{"version", version}}));
    const auto& tasks = p.graph.tasks();
    int n = 0;
    for (const Task& t : tasks)
      if (t.category == TaskCategory::FsdpCopyIn && t.device == p.ranks[0])
        for (const int d : t.after) {
          const TaskCategory c = tasks[static_cast<std::size_t>(d)].category;
          n += c == TaskCategory::Forward || c == TaskCategory::Backward || c == TaskCategory::Recompute;
        }
    return n;
  };
  CHECK(waits_on_frees(2) > 0);
  CHECK(waits_on_frees(1) == 0);
}

TEST_CASE("FSDP's forward AllGathers wait for the rate limiter: a unit's gather follows the free of the unit two before")
{
  // The host issues transformer layer k's AllGather (FSDP2: its copy-in) at k's pre-forward, after
  // waiting for the oldest free event in the limiter's queue once two are queued: the last task of
  // layer k-2's forward, or k-3's, the queue holding one more at the forward's start (backward's
  // prefetched gather finds one event queued, and takes none). No forward gather runs further
  // ahead, and none is issued before a free exists (every one used to be, at the micro-step's start).
  for (const int version : {1, 2}) {
    CAPTURE(version);
    const Plan p = four_micro_steps_on_8(fsdp({{"version", version}, {"mixed_precision", {{"param_dtype", "fp32"}, {"reduce_dtype", "fp32"}}}}));
    const auto& tasks = p.graph.tasks();
    int checked = 0;
    for (const Task& t : tasks) {
      const std::string name = t.name.get();
      const bool first = version == 2 ? t.category == TaskCategory::FsdpCopyIn
                                      : t.category == TaskCategory::AllGather && t.name.get().find("start-up") != std::string::npos;
      if (!first || t.device != p.ranks[0] || t.iteration != 1 || name.find("(forward)") == std::string::npos)
        continue;
      const auto at = name.find("transformer layer ");
      if (at == std::string::npos)
        continue;
      const int k = std::stoi(name.substr(at + 18));
      if (k < 3)
        continue;
      bool waits = false;
      for (const int d : t.after) {
        const Task& before = tasks[static_cast<std::size_t>(d)];
        const std::string what = before.name.get();
        for (const int j : {k - 2, k - 3})
          waits = waits || (before.category == TaskCategory::Forward &&
                            what.find(fmt::format("transformer layer {} ", j)) != std::string::npos);
      }
      CHECK_MESSAGE(waits, name);
      ++checked;
    }
    CHECK(checked >= 4 * 9);  // 4 micro-steps x layers 3..11 of GPT-2
  }
}

TEST_CASE("FSDP2's first backward AllGather waits for the forward's last copy-out (the root's post_forward)")
{
  // _fsdp_state.py _post_forward of the root frees the last all-gather result: the copy-in and
  // all-gather streams wait for the event recorded after the last block's copy-out. The root's
  // backward prefetch of the last block (its copy-in) follows it; it followed the copy-out of the
  // block before (helper-58: the AllGather ran before the last block's forward had its parameters).
  const Plan p = four_micro_steps_on_8(fsdp({{"version", 2}}));
  const auto& tasks = p.graph.tasks();
  int checked = 0;
  for (const Task& t : tasks) {
    const std::string name = t.name.get();
    if (t.category != TaskCategory::FsdpCopyIn || t.device != p.ranks[0] || t.iteration != 1 ||
        name.find("transformer layer 11 (backward)") == std::string::npos)
      continue;
    bool waits = false;
    for (const int d : t.after) {
      const Task& before = tasks[static_cast<std::size_t>(d)];
      waits = waits || (before.category == TaskCategory::FsdpCopy && before.name.get().find("copy-out transformer layer 11") == 0 &&
                        before.name.get().find("(backward)") == std::string::npos);
    }
    CHECK_MESSAGE(waits, name);
    ++checked;
  }
  CHECK(checked == 4);  // one per micro-step
}

TEST_CASE("FSDP1's passes on the post-backward stream: cast and divide before each reduction, the shard after it")
{
  // default_hooks.py: f doubled from 1 while f divides the world and world / f > f (so 4 for 6 ranks).
  for (const auto& [world, f] : {std::pair{1, 1}, {2, 2}, {3, 2}, {4, 2}, {6, 4}, {8, 4}, {16, 4}, {32, 8}, {64, 8}, {256, 16}})
    CHECK(gradient_predivide_factor(world) == f);
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  const GpuSpec& gpu = load_topology("hgx-h100").gpu;
  const int U = static_cast<int>(shard_units(gpt2).units.size());
  const auto plan_of = four_micro_steps_on_8;
  const auto passes = [](const Plan& p) {  // the first rank's in the second iteration
    std::vector<int> ids;
    for (int i = 0; i < p.graph.size(); ++i)
      if (const Task& t = p.graph[i]; t.category == TaskCategory::FsdpGradPass && t.iteration == 1 && t.device == p.ranks[0])
        ids.push_back(i);
    return ids;
  };
  const auto seconds = [](const Plan& p, const std::vector<int>& ids) {
    double s = 0;
    for (const int i : ids) {
      CHECK(p.graph[i].kind == TaskKind::Compute);  // shares the GPU with the backward beside it
      s += p.graph[i].seconds;
    }
    return s;
  };
  SUBCASE("every micro-step reduced: the unsharded gradient cast to fp32 and divided by 4, the shard divided by 2 and added up")
  {
    const Plan p = plan_of(fsdp({{"version", 1}}));
    const auto ids = passes(p);
    CHECK(ids.size() == static_cast<std::size_t>(2 * U * 4));
    // Per parameter and micro-step: bf16 read, fp32 written, fp32 read and written; per shard element fp32
    // read and written, and on 3 micro-steps two fp32 read and one written.
    CHECK(seconds(p, ids) == doctest::Approx(memory_bound_seconds(P * 14 * 4 + P / 8 * (8 * 4 + 12 * 3), gpu)).epsilon(0.01));
    // Each unit's reduce-scatter waits for its pass (a task of it has the pass among its ancestors).
    const auto depends_on = [&p](int task, int ancestor) {
      std::vector<int> todo{task};
      std::vector<bool> seen(static_cast<std::size_t>(p.graph.size()));
      while (!todo.empty()) {
        const int t = todo.back();
        todo.pop_back();
        if (t == ancestor)
          return true;
        for (const int a : p.graph[t].after)
          if (a >= ancestor && !seen[static_cast<std::size_t>(a)]) {
            seen[static_cast<std::size_t>(a)] = true;
            todo.push_back(a);
          }
      }
      return false;
    };
    int checked = 0;
    for (const int i : ids) {
      const std::string name = p.graph[i].name.get();
      if (name.rfind("cast and pre-divide ", 0) != 0)
        continue;
      const std::string rs = "reduce-scatter " + name.substr(20, name.find(" gradients") - 20) + " gradients";
      int j = i + 1;
      while (j < p.graph.size() && !(p.graph[j].category == TaskCategory::ReduceScatter && p.graph[j].name.get().find(rs) == 0))
        ++j;
      REQUIRE(j < p.graph.size());
      CHECK(depends_on(j, i));
      ++checked;
    }
    CHECK(checked == U * 4);
  }
  SUBCASE("no_sync: only the last micro-step's, nothing added up; pure bf16 only divides, then casts the shard back")
  {
    const Plan p = plan_of(fsdp({{"version", 1}, {"no_sync", true}}));
    CHECK(passes(p).size() == static_cast<std::size_t>(2 * U));
    CHECK(seconds(p, passes(p)) == doctest::Approx(memory_bound_seconds(P * 14 + P / 8 * 8, gpu)).epsilon(0.01));
    const Plan pure = plan_of(fsdp({{"version", 1}, {"no_sync", true}, {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "bf16"}}}}));
    CHECK(seconds(pure, passes(pure)) == doctest::Approx(memory_bound_seconds(P * 4 + P / 8 * (4 + 6), gpu)).epsilon(0.01));
  }
  SUBCASE("FSDP2 has none of them")
  {
    CHECK(passes(plan_of(fsdp())).empty());
  }
}

TEST_CASE("FSDP x TP: a gather per column-parallel linear (KempnerForge's TP plan) against one per block input")
{
  const auto plan_of = [](const char* gather) {
    nlohmann::json s = gpt2_scenario(fsdp({{"tensor_parallel", 4}, {"sequence_parallel", true},
                                           {"tensor_parallel_gather", gather}}), 8, 1);
    s["model"] = {{"family", "llama"}, {"name", "small-llama"}, {"hidden", 1024}, {"layers", 4}, {"heads", 16},
                  {"kv_heads", 4}, {"ffn", 4096}, {"seq_len", 1024}, {"vocab", 32000}};
    return plan_scenario(parse_scenario(s, "s.json")).plan;
  };
  // Every AllGather and ReduceScatter here is of one hidden-sized activation. One gather per block input:
  // per layer 2 x (ReduceScatter + AllGather) in forward and in backward (8), the first layer's input
  // (2) and the head's input gradient (2): 36. Per linear: after o_proj the MLP's gate and up gather (3
  // forward, 3 backward), after down_proj the next layer's q, k and v (4 and 4; the last layer's, the
  // head's one: 2 and 2): 14 x 3 + 10, the first layer's input 1 + 3, the head's 2: 58.
  CHECK(tp_bytes(plan_of("linear")) / tp_bytes(plan_of("module")) == doctest::Approx(58.0 / 36).epsilon(0.03));
}

TEST_CASE("FSDP's prefetch: none exposes every AllGather behind the ReduceScatter, backward_pre hides most")
{
  const auto time_of = [](const nlohmann::json& strategy) {
    return predict(parse_scenario(gpt2_scenario(strategy, 16, 2), "s.json")).result;
  };
  const RunResult pre = time_of(fsdp({{"version", 1}, {"backward_prefetch", "backward_pre"}}));
  const RunResult post = time_of(fsdp({{"version", 1}, {"backward_prefetch", "backward_post"}}));
  const RunResult none = time_of(fsdp({{"version", 1}, {"backward_prefetch", "none"}}));
  CHECK(pre.iteration_time_s >= pre.compute_time_s);
  CHECK(none.iteration_time_s > post.iteration_time_s);
  CHECK(post.iteration_time_s >= pre.iteration_time_s * (1 - 1e-9));
  REQUIRE(!none.comm_overlap.empty());
  for (const auto& o : none.comm_overlap) {
    CHECK(o.exposed_s <= o.in_flight_s * (1 + 1e-9));
    CHECK(o.exposed_s >= 0);
  }
}

TEST_CASE("A multi-node collective is in flight from its last rank's join to the GPU's result, not only on its PCIe legs")
{
  // FSDP across 2 nodes, one GPU each, on a slow network: the NIC-to-NIC flows, which touch no GPU, set
  // how long every AllGather and ReduceScatter takes. Their time on the critical path cannot exceed the
  // time they are in flight, and halving the NICs' rate must lengthen both.
  const auto run_at = [](double gbps) {
    nlohmann::json s = gpt2_scenario(fsdp(), 2, 2);
    s["cluster"]["nic"] = {{"gbps", gbps}};
    s["cluster"]["gpus_per_node"] = 1;
    return predict(parse_scenario(s, "s.json")).result;
  };
  const RunResult fast = run_at(20), slow = run_at(10);
  for (const RunResult* r : {&fast, &slow}) {
    CHECK(r->comm_time_s >= r->exposed_comm_time_s);
    REQUIRE(!r->comm_overlap.empty());
    for (const auto& o : r->comm_overlap) {
      double critical = 0;
      for (const auto& part : r->critical_path)
        if (part.category == o.category)
          critical += part.seconds;
      CHECK(critical <= o.in_flight_s * (1 + 1e-6));
    }
  }
  CHECK(slow.comm_time_s > 1.6 * fast.comm_time_s);
}

TEST_CASE("FSDP bytes on the wire: each rank sends at least (n-1)/n of every AllGather and ReduceScatter")
{
  // A ring's payload; NCCL's protocols add their own overhead (LL128, LL) and NVSwitch algorithms their own paths.
  const double P = static_cast<double>(load_model("gpt2").params());
  const RunResult r = predict(parse_scenario(gpt2_scenario(fsdp(), 8), "s.json")).result;
  const auto su = shard_units(load_model("gpt2"));
  const double root = su.units[0].params;
  const double payload = 7.0 / 8 * (P * 2 + (P - root) * 2 + P * 4);
  REQUIRE(!r.per_gpu.empty());
  for (const auto& g : r.per_gpu) {
    CHECK(g.bytes_sent >= payload * (1 - 1e-9));
    CHECK(g.bytes_sent <= 2 * payload);  // LL, the most wasteful protocol, doubles it
  }
}

TEST_CASE("ZeRO: stages 1-2 AllReduce gradient buckets and gather the updated parameters; stage 3 fetches per module")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  // buckets of 1e7 elements: gpt2's 124 M parameters fill several
  const auto plan_of = [](int stage) {
    return plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7}}, 8), "s.json"))
        .plan;
  };
  const Plan z1 = plan_of(1), z2 = plan_of(2), z3 = plan_of(3);
  auto c1 = comm_of(z1), c3 = comm_of(z3);
  CHECK(c1["gradients all_reduce"].bytes == doctest::Approx(P * 2));       // bf16 gradients
  CHECK(c1["parameters all_gather"].bytes == doctest::Approx(P * 2));
  // One all_gather_into_tensor per parameter group (runtime/utils.py all_gather_dp_groups), whatever
  // allgather_bucket_size says (it sizes only the fallback for torch without all_gather_into_tensor),
  // and none on one GPU, which the note says.
  CHECK(c1["parameters all_gather"].calls == 1);
  for (const int stage : {1, 2}) {
    CAPTURE(stage);
    const Plan small = plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"allgather_bucket_size", 1e6}}, 8), "s.json")).plan;
    CHECK(comm_of(small)["parameters all_gather"].calls == 1);
    CHECK(comm_of(small)["parameters all_gather"].bytes == doctest::Approx(P * 2));
    const Plan one = plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", stage}}, 1), "s.json")).plan;
    CHECK(comm_of(one).count("parameters all_gather") == 0);
    CHECK(std::any_of(one.notes.begin(), one.notes.end(),
                      [](const std::string& n) { return n.find("no AllGather of the updated parameters (one GPU)") != std::string::npos; }));
  }
  // stage 3 reduce-scatters every gradient (persistent tensors' too: their gradients are partitioned)
  CHECK(c3["gradients reduce_scatter"].bytes == doctest::Approx(P * 2));
  CHECK(c3["gradients reduce_scatter"].calls == static_cast<int>(assign_capped_buckets(load_model("gpt2"), 2, 2e7).size()));
  // The ZeRO paper's accounting with Adam in mixed precision: 12 bytes of optimizer state per
  // parameter on 1/N (at least: the foreach step's temporaries come on top); stage 3 partitions the
  // weights too. (Stage 2 against stage 1 depends on when the peak falls: GPT-2's is in the loss's
  // backward, before stage 1's full gradients exist.)
  CHECK(z1.memory.front().optimizer >= P * 12 / 8 * (1 - 1e-9));
  // Accumulating over 2 micro-steps: stage 2 reduces in each, stage 1 at the boundary only, also
  // with overlap_comm's hooks.
  const auto accumulating = [](const nlohmann::json& strategy) {
    nlohmann::json doc = gpt2_scenario(strategy, 8);
    doc["training"]["global_batch"] = 8 * 4 * 2;
    return comm_of(plan_scenario(parse_scenario(doc, "s.json")).plan)["gradients all_reduce"].bytes;
  };
  CHECK(accumulating({{"kind", "zero"}, {"stage", 2}, {"reduce_bucket_size", 1e7}}) == doctest::Approx(2 * P * 2));
  CHECK(accumulating({{"kind", "zero"}, {"stage", 1}, {"reduce_bucket_size", 1e7}}) == doctest::Approx(P * 2));
  CHECK(accumulating({{"kind", "zero"}, {"stage", 1}, {"reduce_bucket_size", 1e7}, {"overlap_comm", true}}) ==
        doctest::Approx(P * 2));
  // GPT-2's 124 M parameters are within stage3_max_live_parameters (1e9): the first use gathers the
  // token embedding, and the prefetches of the first two uses (one coalesced AllGather each, of at
  // least stage3_prefetch_bucket_size elements) walk the whole forward and backward while every
  // module is gathered, so none is released: each element is gathered once per iteration, in three
  // AllGathers. With stage3_max_reuse_distance 0 the token embedding, released after its use before
  // the walk reached its backward, is gathered again in the second prefetch.
  const Model gpt2 = load_model("gpt2");
  double fetched = 0, largest = 0;
  int modules = 0;
  for (const auto& l : gpt2.layers) {
    double e = 0;
    for (const auto t : l.param_tensors)
      e += t > 1e5 ? static_cast<double>(t) : 0.0;
    fetched += e;
    largest = std::max(largest, e);
    modules += e > 0 ? 1 : 0;
  }
  CHECK(c3["parameters all_gather"].calls == 3);
  CHECK(c3["parameters all_gather"].bytes == doctest::Approx(fetched * 2));
  const auto z3_with = [](const nlohmann::json& extra) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7}};
    strategy.update(extra);
    return plan_scenario(parse_scenario(gpt2_scenario(strategy, 8), "s.json")).plan;
  };
  auto c3_far = comm_of(z3_with({{"stage3_max_reuse_distance", 0}}));
  CHECK(c3_far["parameters all_gather"].calls == 3);
  CHECK(c3_far["parameters all_gather"].bytes == doctest::Approx((fetched + largest) * 2));
  // Without prefetch only the reuse rule keeps a module (1e9 elements by default: all of GPT-2
  // stays gathered from its forward to its backward), each gathered by its own AllGather; at 0 each
  // is gathered again before its backward, and ZeRO-3 holds less than stages 1 and 2.
  const Plan kept = z3_with({{"stage3_prefetch_bucket_size", 0}});
  const Plan refetched = z3_with({{"stage3_prefetch_bucket_size", 0}, {"stage3_max_reuse_distance", 0}});
  auto c_kept = comm_of(kept), c_refetched = comm_of(refetched);
  CHECK(c_kept["parameters all_gather"].calls == modules);
  CHECK(c_refetched["parameters all_gather"].calls == 2 * modules);
  CHECK(c_refetched["parameters all_gather"].bytes == doctest::Approx(2 * c_kept["parameters all_gather"].bytes));
  CHECK(refetched.memory.front().total() < z1.memory.front().total());
  CHECK(refetched.memory.front().total() < z2.memory.front().total());
  // Kept, all of the partitioned parameters are gathered at the turn; refetched without prefetch,
  // one module at a time, the largest (the token embedding) at most.
  CHECK(kept.memory.front().total() - refetched.memory.front().total() == doctest::Approx((fetched - largest) * 2));
  CHECK(z3.memory.front().total() == doctest::Approx(kept.memory.front().total()));
}

TEST_CASE("ZeRO-3 with MiCS shards within groups and AllReduces the shards across them; hpZ gathers from a secondary partition")
{
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  double fetched = 0;  // partitioned elements (tensors above the persistence threshold)
  for (const auto& l : gpt2.layers)
    for (const auto t : l.param_tensors)
      fetched += t > 1e5 ? static_cast<double>(t) : 0.0;
  const auto plan = [](const nlohmann::json& extra, int gpus, int micro_steps = 1) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7}};
    if (extra.is_object())
      strategy.update(extra);
    nlohmann::json doc = gpt2_scenario(strategy, gpus);
    doc["training"]["global_batch"] = gpus * 4 * micro_steps;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  const int buckets = static_cast<int>(assign_capped_buckets(gpt2, 2, 2e7).size());
  // MiCS 4 on 8 GPUs: two shard groups run ZeRO-3 each, as 4 GPUs would; the 4 pairs of replicas
  // AllReduce each bucket's shard, a quarter of it, once per iteration.
  const Plan mics = plan({{"mics_shard_size", 4}}, 8, 2), four = plan({}, 4, 2);
  auto c = comm_of(mics), c4 = comm_of(four);
  CHECK(c["parameters all_gather"].groups == 2);
  CHECK(c["parameters all_gather"].bytes == doctest::Approx(c4["parameters all_gather"].bytes));
  CHECK(c["gradients reduce_scatter"].groups == 2);
  CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(2 * P * 2));  // every micro-step
  CHECK(c["gradient shards across replicas all_reduce"].groups == 4);
  CHECK(c["gradient shards across replicas all_reduce"].calls == buckets);    // at the boundary only
  CHECK(c["gradient shards across replicas all_reduce"].bytes == doctest::Approx(P * 2 / 4));
  CHECK(mics.memory.front().total() == doctest::Approx(four.memory.front().total()).epsilon(1e-9));
  // The AllReduce is synchronous on the reduce-and-partition stream (stage3.py
  // __reduce_and_partition_ipg_grads -> mics.py partition_grads -> allreduce_mics_shard_grads): the
  // next bucket's ReduceScatter of the boundary micro-step waits for the previous bucket's AllReduce.
  {
    const Plan once = plan({{"mics_shard_size", 4}}, 8, 1);
    const auto& tasks = once.graph.tasks();
    const auto after_all_reduce = [&](std::size_t i) {
      std::vector<std::size_t> todo{i};
      std::vector<bool> seen(tasks.size(), false);
      while (!todo.empty()) {
        const std::size_t j = todo.back();
        todo.pop_back();
        for (const int a : tasks[j].after) {
          const auto u = static_cast<std::size_t>(a);
          if (seen[u] || tasks[u].iteration != 1)
            continue;
          seen[u] = true;
          if (tasks[u].category == TaskCategory::AllReduce)
            return true;
          todo.push_back(u);
        }
      }
      return false;
    };
    int waiting = 0, scatters = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].iteration == 1 && tasks[i].category == TaskCategory::ReduceScatter) {
        ++scatters;
        waiting += after_all_reduce(i) ? 1 : 0;
      }
    REQUIRE(scatters > 0);
    CHECK(waiting > 0);
  }
  // hpZ 4 on 8 GPUs, without prefetch or reuse so that every module is gathered for each use: the
  // first micro-step's forward over all 8 (one group), the backward and the second micro-step's
  // forward over the secondary groups of 4; the secondary copy, 1/4 of the partitioned parameters,
  // held on top.
  const nlohmann::json refetch = {{"stage3_prefetch_bucket_size", 0}, {"stage3_max_reuse_distance", 0}};
  nlohmann::json with_hpz = refetch;
  with_hpz["zero_hpz_partition_size"] = 4;
  const Plan hpz = plan(with_hpz, 8, 2), plain = plan(refetch, 8, 2);
  c = comm_of(hpz);
  CHECK(c["parameters all_gather"].groups == 1);
  CHECK(c["parameters all_gather"].bytes == doctest::Approx(fetched * 2));
  CHECK(c["parameters (hpZ secondary) all_gather"].groups == 2);
  CHECK(c["parameters (hpZ secondary) all_gather"].bytes == doctest::Approx(3 * fetched * 2));
  CHECK(comm_of(plain)["parameters all_gather"].bytes == doctest::Approx(4 * fetched * 2));
  CHECK(c["gradients reduce_scatter"].groups == 1);
  CHECK(hpz.memory.front().total() - plain.memory.front().total() == doctest::Approx(fetched / 4 * 2));
}

TEST_CASE("ZeRO-3 with qwZ gathers int8 values and fp32 scales, and dequantizes them before use")
{
  const Model gpt2 = load_model("gpt2");
  double fetched = 0;  // partitioned elements, each gathered once per iteration (GPT-2 fits the prefetch)
  for (const auto& l : gpt2.layers)
    for (const auto t : l.param_tensors)
      fetched += t > 1e5 ? static_cast<double>(t) : 0.0;
  const auto plan = [](bool quantized) {
    return plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7},
                                                       {"zero_quantized_weights", quantized}},
                                                      8),
                                        "s.json"))
        .plan;
  };
  const Plan plain = plan(false), qwz = plan(true);
  auto c = comm_of(qwz);
  CHECK(comm_of(plain)["parameters all_gather"].bytes == doctest::Approx(fetched * 2));
  CHECK(c["parameters all_gather"].bytes == doctest::Approx(fetched * 1));
  CHECK(c["parameters all_gather"].calls == 3);
  // A scale per 8000 elements of each rank's part of each gather, in fp32: about 4 / 8000 bytes per element.
  CHECK(c["parameters scales all_gather"].calls == 3);
  CHECK(c["parameters scales all_gather"].bytes >= fetched / 8000 * 4);
  CHECK(c["parameters scales all_gather"].bytes <= (fetched / 8000 + 3 * 8) * 4);
  // Dequantized once each: read the int8 values, write bf16, at the memory-bound fraction of HBM.
  const GpuSpec h100 = gpu_spec("H100-SXM");
  CHECK(qwz.compute_per_iteration_s - plain.compute_per_iteration_s ==
        doctest::Approx(fetched * 3 / (h100.memory_bandwidth * kMemoryBoundFraction)));
  // With hpZ the first micro-step's prefetch that reaches the backward (the embedding, released at
  // stage3_max_reuse_distance 0) is split between the primary and secondary groups, the second
  // micro-step's is not: each element is still dequantized once per gather.
  const auto accumulating = [](const nlohmann::json& extra) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7}, {"zero_quantized_weights", true},
                               {"stage3_max_reuse_distance", 0}};
    strategy.update(extra);
    nlohmann::json doc = gpt2_scenario(strategy, 8);
    doc["training"]["global_batch"] = 8 * 4 * 2;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  const Plan one_group = accumulating(nlohmann::json::object()), two_groups = accumulating({{"zero_hpz_partition_size", 4}});
  CHECK(comm_of(two_groups)["parameters all_gather"].calls > 0);
  CHECK(comm_of(two_groups)["parameters (hpZ secondary) all_gather"].calls > 0);
  CHECK(two_groups.compute_per_iteration_s == doctest::Approx(one_group.compute_per_iteration_s));
}

TEST_CASE("ZeRO-3 with qgZ reduces weight matrices by int4 all-to-alls inside and across nodes, the rest by ReduceScatter")
{
  const Model gpt2 = load_model("gpt2");
  const auto plan = [](bool quantized, int gpus, int nodes) {
    return plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7},
                                                       {"zero_quantized_gradients", quantized}},
                                                      gpus, nodes),
                                        "s.json"))
        .plan;
  };
  // 16 GPUs on 2 nodes: a weight matrix (a linear or embedding layer's first tensor) whose size
  // divides by 2 x 16 goes as int4 (half a byte per element) to the node's 8 GPUs, then 1/8 of it
  // across the 2 nodes; every other tensor is reduce-scattered in bf16.
  double matrices = 0, others = 0;
  int chains = 0, scattered = 0;
  for (const auto& l : gpt2.layers)
    for (std::size_t t = 0; t < l.param_tensors.size(); ++t) {
      const double T = static_cast<double>(l.param_tensors[t]);
      if ((l.kind == "linear" || l.kind == "embedding") && t == 0 && std::fmod(T, 32) == 0) {
        matrices += T;
        ++chains;
      } else {
        others += T;
        ++scattered;
      }
    }
  REQUIRE(chains > 0);
  auto c = comm_of(plan(true, 16, 2));
  CHECK(c["gradients (qgZ int4 inside nodes) alltoall"].groups == 2);
  CHECK(c["gradients (qgZ int4 inside nodes) alltoall"].calls == chains);
  CHECK(c["gradients (qgZ int4 inside nodes) alltoall"].bytes == doctest::Approx(matrices / 2));
  CHECK(c["gradients (qgZ int4 across nodes) alltoall"].groups == 8);
  CHECK(c["gradients (qgZ int4 across nodes) alltoall"].bytes == doctest::Approx(matrices / 2 / 8));
  CHECK(c["gradient scales (qgZ inside nodes) alltoall"].calls == chains);
  CHECK(c["gradients reduce_scatter"].calls == scattered);
  CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(others * 2));
  // On one node DeepSpeed reduce-scatters the buckets as without qgZ (stage3.py: num_nodes > 1).
  auto one = comm_of(plan(true, 8, 1)), plain = comm_of(plan(false, 8, 1));
  CHECK(one.count("gradients (qgZ int4 inside nodes) alltoall") == 0);
  CHECK(one["gradients reduce_scatter"].calls == plain["gradients reduce_scatter"].calls);
  CHECK(one["gradients reduce_scatter"].bytes == doctest::Approx(plain["gradients reduce_scatter"].bytes));
}

TEST_CASE("ZeRO-1/2 without use_multi_rank_bucket_allreduce reduce each bucket's slices to their owners")
{
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  const auto comm = [](const nlohmann::json& extra) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 2}, {"reduce_bucket_size", 1e7}};
    strategy.update(extra);
    return comm_of(plan_scenario(parse_scenario(gpt2_scenario(strategy, 8), "s.json")).plan);
  };
  const auto buckets = static_cast<int>(assign_capped_buckets(gpt2, 2, 2e7).size());
  auto c = comm({{"use_multi_rank_bucket_allreduce", false}});
  CHECK(c.count("gradients all_reduce") == 0);
  CHECK(c["gradients reduce"].bytes == doctest::Approx(P * 2));  // every gradient once, to its owner
  // One Reduce per bucket and one more for each of the 7 partition boundaries inside a bucket
  // (1e7-element buckets against 15.5 M-element partitions: none falls on a bucket's edge).
  CHECK(c["gradients reduce"].calls == buckets + 7);
  // The default (allreduce_and_scatter) and reduce_scatter false (gradient_reduction_w_predivide):
  // one AllReduce per bucket.
  for (const auto& extra : {nlohmann::json::object(), nlohmann::json{{"reduce_scatter", false}},
                            nlohmann::json{{"reduce_scatter", false}, {"use_multi_rank_bucket_allreduce", false}}}) {
    c = comm(extra);
    CHECK(c.count("gradients reduce") == 0);
    CHECK(c["gradients all_reduce"].calls == buckets);
    CHECK(c["gradients all_reduce"].bytes == doctest::Approx(P * 2));
  }
  // Stage 3 reduce-scatters whatever they say (stage3.py).
  c = comm({{"stage", 3}, {"use_multi_rank_bucket_allreduce", false}});
  CHECK(c["gradients reduce_scatter"].bytes == doctest::Approx(P * 2));
}

TEST_CASE("ZeRO memory follows DeepSpeed's buffers: half-precision gradient partition, IPG buckets in backward, fp32 copy at the step")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const double bucket = 1e7 * 2;  // reduce_bucket_size elements in bf16
  const auto plan_of = [](int stage, int accumulation) {
    nlohmann::json doc = gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7}}, 8);
    doc["training"]["global_batch"] = 8 * 4 * accumulation;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  const auto at = [](const Plan& p, const std::string& prefix) {
    for (const auto& m : p.memory_curve)
      if (m.at.rfind(prefix, 0) == 0)
        return m;
    FAIL("no moment " << prefix);
    return MemoryPoint{};
  };
  // Stage 2 (stage_1_and_2.py): nothing in forward; the IPG bucket from backward's start; the flat
  // partition of bf16 gradients (grads_in_partition) from its first reduction; at the step the
  // flattened partition cast to the fp32 copy the optimizer reads, the buckets released.
  const Plan z2 = plan_of(2, 1);
  REQUIRE(z2.memory_curve.size() > 4);
  CHECK(z2.memory_curve.front().grads == 0);
  CHECK(at(z2, "the loss's backward").grads == doctest::Approx(bucket));
  const MemoryPoint& cast = z2.memory_curve[z2.memory_curve.size() - 2];
  const MemoryPoint& step = z2.memory_curve.back();
  CHECK(cast.at == "the optimizer step");
  CHECK(cast.grads == doctest::Approx(P / 8 * (2 + 2 + 4)));
  // The partition and its flattened copy are freed before the step (step(): free_grad_in_param_list,
  // averaged_gradients[i] = None, then _optimizer_step): the fp32 copy alone.
  CHECK(step.grads == doctest::Approx(P / 8 * 4));
  const MemoryPoint& last_backward = z2.memory_curve[z2.memory_curve.size() - 3];
  CHECK(last_backward.grads == doctest::Approx(P / 8 * 2 + bucket));  // backward's last layer
  // Beside it, the flattened copy of the bucket being reduced (allreduce_bucket: self.flatten(bucket)),
  // from backward's first reduction on; none before it.
  const MemoryPoint& loss_backward = at(z2, "the loss's backward");
  CHECK(last_backward.other - loss_backward.other == doctest::Approx(bucket));
  // Accumulating, the first micro-step's partition stays to the next (the epilogue's all_grad_tensors,
  // views into it), and each later micro-step's first reduction makes a new one beside it
  // (copy_grads_in_partition), added in at its epilogue: both from the first bucket on.
  const Plan z2m2 = plan_of(2, 2);
  CHECK(z2m2.memory_curve.front().grads == doctest::Approx(P / 8 * 2));
  CHECK(z2m2.memory_curve[z2m2.memory_curve.size() - 3].grads == doctest::Approx(P / 8 * 2 * 2 + bucket));
  CHECK(z2m2.memory_curve.back().grads == doctest::Approx(P / 8 * 4));
  // Stage 1 reduces at the accumulation boundary only (engine.py allreduce_gradients): the full bf16
  // gradients stay between micro-steps.
  CHECK(plan_of(1, 1).memory_curve.front().grads == 0);
  CHECK(plan_of(1, 2).memory_curve.front().grads == doctest::Approx(P * 2));
  // Stage 3 (stage3.py): the bf16 gradient partition and the IPG bucket are made at init and kept.
  const Plan z3 = plan_of(3, 1);
  CHECK(z3.memory_curve.front().grads == doctest::Approx(P / 8 * 2 + bucket));
  CHECK(z3.memory_curve.back().grads == doctest::Approx(P / 8 * (2 + 4) + bucket));
}

TEST_CASE("ZeRO's IPG buckets hold reduce_bucket_size elements even when the model is smaller")
{
  // GPT-2's 124 M parameters against the default reduce_bucket_size of 5e8: DeepSpeed allocates the
  // buffer at its configured size (stage_1_and_2.py setup_buckets, stage3.py _setup_for_real_optimizer:
  // torch.empty(reduce_bucket_size)), not at the model's.
  const double P = static_cast<double>(load_model("gpt2").params());
  const double bucket = 5e8 * 2;  // bf16
  REQUIRE(P < 5e8);
  const auto plan_of = [](const nlohmann::json& strategy) {
    return plan_scenario(parse_scenario(gpt2_scenario(strategy, 8), "s.json")).plan;
  };
  const auto loss_backward = [](const Plan& p) {
    for (const auto& m : p.memory_curve)
      if (m.at.rfind("the loss's backward", 0) == 0)
        return m.grads;
    FAIL("no loss backward");
    return 0.0;
  };
  // Stage 2: one buffer, two with overlap_comm, from backward's start (nothing else is a gradient yet).
  CHECK(loss_backward(plan_of({{"kind", "zero"}, {"stage", 2}})) == doctest::Approx(bucket));
  CHECK(loss_backward(plan_of({{"kind", "zero"}, {"stage", 2}, {"overlap_comm", true}})) == doctest::Approx(2 * bucket));
  // Stage 3: the buffer beside the gradient partition from init.
  CHECK(plan_of({{"kind", "zero"}, {"stage", 3}}).memory_curve.front().grads == doctest::Approx(P / 8 * 2 + bucket));
}

TEST_CASE("ZeRO-1 reaches the optimizer step with its partition's gradients only, as ZeRO-2")
{
  // stage_1_and_2.py: the boundary's reduction copies the partition's gradients into grads_in_partition
  // and the rest are dropped before the step (free_grad_in_param_list(params_not_in_partition)), so the
  // step holds the partition in bf16 and its fp32 copy (with the flattened bf16 copy while cast).
  const double P = static_cast<double>(load_model("gpt2").params());
  const auto plan_of = [](int stage, int accumulation, const nlohmann::json& offload) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7}};
    if (!offload.is_null())
      strategy["offload_optimizer"] = offload;
    nlohmann::json doc = gpt2_scenario(strategy, 8);
    doc["training"]["global_batch"] = 8 * 4 * accumulation;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  for (const int accumulation : {1, 2}) {
    CAPTURE(accumulation);
    const Plan z1 = plan_of(1, accumulation, nullptr), z2 = plan_of(2, accumulation, nullptr);
    REQUIRE(z1.memory_curve.size() > 2);
    const MemoryPoint& cast = z1.memory_curve[z1.memory_curve.size() - 2];
    const MemoryPoint& step = z1.memory_curve.back();
    CHECK(cast.at == "the optimizer step");
    CHECK(cast.grads == doctest::Approx(P / 8 * (2 + 2 + 4)));
    CHECK(step.grads == doctest::Approx(P / 8 * 4));  // the bf16 partition freed once cast
    CHECK(step.grads == doctest::Approx(z2.memory_curve.back().grads));
  }
  // Backward still produces (and, accumulating, keeps) the full gradients.
  CHECK(plan_of(1, 2, nullptr).memory_curve.front().grads == doctest::Approx(P * 2));
  // With ZeRO-Offload the partition went to the host: no gradients on the GPU at the step.
  CHECK(plan_of(1, 1, {{"device", "cpu"}}).memory_curve.back().grads == 0);
}

TEST_CASE("ZeRO-3's foreach AdamW temporary covers one optimizer sub-group; stages 1-2 step the whole partition")
{
  // stage3.py step() runs _optimizer_step(sub_group_id) per sub-group of at most sub_group_size
  // (config.py: 1e9) partition elements, so torch's _multi_tensor_adamw makes its
  // _foreach_sqrt(exp_avg_sqs) list for one sub-group at a time; stage_1_and_2.py steps the
  // partition's group at once. A Llama-shaped model of 5.5 B parameters on 2 GPUs: 2.7 B per
  // partition, above one sub-group.
  const nlohmann::json model = {{"family", "llama"}, {"name", "wide-4-layers"}, {"hidden", 8192}, {"layers", 4},
                                {"heads", 64}, {"kv_heads", 8}, {"ffn", 28672}, {"seq_len", 512}, {"vocab", 128256}};
  const auto step_of = [&](int stage, const char* optimizer) {
    nlohmann::json doc = gpt2_scenario({{"kind", "zero"}, {"stage", stage}}, 2);
    doc["model"] = model;
    doc["training"]["micro_batch"] = 1;
    doc["training"]["optimizer"] = optimizer;
    const Plan p = plan_scenario(parse_scenario(doc, "s.json")).plan;
    REQUIRE(!p.memory_curve.empty());
    CHECK(p.memory_curve.back().at == "the optimizer step");
    return p.memory_curve.back();
  };
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    const MemoryPoint foreach_step = step_of(stage, "adamw-foreach"), fused_step = step_of(stage, "adamw-fused");
    // DeepSpeed's own "adamw" is FusedAdam (engine.py _configure_basic_optimizer): no temporaries.
    CHECK(step_of(stage, "adamw").optimizer == doctest::Approx(fused_step.optimizer));
    // bf16: the partition's fp32 master weights and two fp32 Adam states, 12 B per element.
    const double partition = fused_step.optimizer / 12;
    REQUIRE(partition > 2e9);
    const double temporary = foreach_step.optimizer - fused_step.optimizer;
    if (stage == 3)
      CHECK(temporary == doctest::Approx(1e9 * 4));  // one sub-group's fp32 sqrt(exp_avg_sq)
    else
      CHECK(temporary == doctest::Approx(partition * 4));
  }
}

TEST_CASE("ZeRO-3 without overlap_comm reduce-scatters on the compute stream: backward waits for each bucket")
{
  // stage3.py: reduce_and_partition_stream is the default stream unless overlap_comm, and the
  // ReduceScatter is synchronous on it; the parameter AllGathers stay asynchronous either way.
  const auto scenario_of = [](bool overlap) {
    return parse_scenario(
        gpt2_scenario({{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7}, {"overlap_comm", overlap}}, 8), "s.json");
  };
  const Prediction on = plan_scenario(scenario_of(true)), off = plan_scenario(scenario_of(false));
  // The same collectives either way.
  auto c_on = comm_of(on.plan), c_off = comm_of(off.plan);
  CHECK(c_off["gradients reduce_scatter"].calls == c_on["gradients reduce_scatter"].calls);
  CHECK(c_off["parameters all_gather"].bytes == doctest::Approx(c_on["parameters all_gather"].bytes));
  // On the compute stream, the ReduceScatters are no longer hidden behind the backward.
  const RunResult r_on = predict(scenario_of(true)).result, r_off = predict(scenario_of(false)).result;
  CHECK(r_off.iteration_time_s > r_on.iteration_time_s);
  CHECK(r_off.exposed_comm_time_s > r_on.exposed_comm_time_s);
  // Every stage-3 backward compute after a bucket's ReduceScatter waits for that ReduceScatter.
  const auto reduce_scatters_waited = [](const Plan& p) {
    const auto& tasks = p.graph.tasks();
    int waited = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.iteration != 1 || t.category != TaskCategory::Backward || t.kind != TaskKind::Compute || t.device != p.ranks[0])
        continue;
      for (const int a : t.after)
        waited += tasks[static_cast<std::size_t>(a)].category == TaskCategory::ReduceScatter ? 1 : 0;
    }
    return waited;
  };
  CHECK(reduce_scatters_waited(on.plan) == 0);
  CHECK(reduce_scatters_waited(off.plan) > 0);
}

TEST_CASE("ZeRO-3's persistent parameters: whole on every GPU at all times, gathered again after each step")
{
  // parameter_offload.py mark_persistent_parameters: tensors of at most stage3_param_persistence_threshold
  // elements; the coordinator never releases them (ds_persist), the step partitions every parameter
  // and stage3.py _post_step gathers the persistent ones again, one AllGather per tensor.
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params());
  double persistent = 0;
  int tensors = 0;
  for (const auto& l : gpt2.layers)
    for (const auto t : l.param_tensors)
      if (static_cast<double>(t) <= 1e5) {
        persistent += static_cast<double>(t);
        ++tensors;
      }
  REQUIRE(tensors > 0);
  const auto plan_of = [](const nlohmann::json& extra) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 3}, {"reduce_bucket_size", 1e7}};
    strategy.update(extra);
    return plan_scenario(parse_scenario(gpt2_scenario(strategy, 8), "s.json")).plan;
  };
  const Plan z3 = plan_of(nlohmann::json::object());
  auto c = comm_of(z3);
  CHECK(c["persistent parameters all_gather"].bytes == doctest::Approx(persistent * 2));
  CHECK(c["persistent parameters all_gather"].calls == tensors);
  // The bf16 partition of every parameter plus the persistent ones whole, from the first moment on.
  CHECK(z3.memory_curve.front().weights == doctest::Approx(P / 8 * 2 + persistent * 2));
  // Everything persistent: no module is gathered, every tensor comes back after the step, and the
  // GPU holds more than when one module at a time is gathered (it used to hold less).
  const Plan all = plan_of({{"stage3_param_persistence_threshold", 1e9}});
  const Plan one_at_a_time = plan_of({{"stage3_prefetch_bucket_size", 0}, {"stage3_max_reuse_distance", 0}});
  auto c_all = comm_of(all);
  CHECK(c_all.count("parameters all_gather") == 0);
  CHECK(c_all["persistent parameters all_gather"].bytes == doctest::Approx(P * 2));
  CHECK(all.memory_curve.front().weights == doctest::Approx(P / 8 * 2 + P * 2));
  CHECK(all.memory.front().total() > one_at_a_time.memory.front().total());
  // offload_param: the partitions on the host, the persistent tensors still whole on the GPU (as weights).
  const Plan offloaded = plan_of({{"offload_param", {{"device", "cpu"}}}});
  CHECK(offloaded.memory_curve.front().weights == doctest::Approx(persistent * 2));
}

TEST_CASE("ZeRO-Offload: gradients to the host after each reduction, the step on the host's DRAM, the parameters back")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const double bucket = 1e7 * 2;
  const auto plan_of = [](int stage, int accumulation, int gpus, nlohmann::json offload) {
    nlohmann::json doc = gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7}, {"offload_optimizer", offload}}, gpus);
    doc["training"]["global_batch"] = gpus * 4 * accumulation;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  const nlohmann::json cpu = {{"device", "cpu"}};
  // PCIe bytes per iteration, each rank's 1/8 of every gradient (bf16, then fp32 at the boundary),
  // as DeepSpeed's copies run over 2 micro-steps: stage 1 reduces at the boundary only, where the
  // accumulation path brings its (empty) host buffer in and the sum out; stage 2 copies out after
  // the first micro-step, in and out after the second; stage 3 out and back in after the first.
  struct Expected {
    int stage;
    double out, in;  // bytes per element of the rank's partition
  };
  for (const Expected e : {Expected{1, 2 + 4, 2}, Expected{2, 2 + 2 + 4, 2}, Expected{3, 2 + 2 + 4, 2 + 2}}) {
    CAPTURE(e.stage);
    auto c = comm_of(plan_of(e.stage, 2, 8, cpu));
    CHECK(c["gradients (ZeRO-Offload) GPU -> host"].bytes == doctest::Approx(P / 8 * e.out));
    CHECK(c["gradients (ZeRO-Offload) host -> GPU"].bytes == doctest::Approx(P / 8 * e.in));
  }
  CHECK(offload_gradient_copies(2, 0, 1, 2).size() == 1);  // one micro-step: only the fp32 copy out
  const Plan z3 = plan_of(3, 1, 8, cpu);
  // The step: a delay on the GPU (the host works), memory-bound on both sockets' DRAM with every
  // process of the node stepping at once: 8 x P/8 elements x (Adam's 28 bytes + the bf16 cast's 6).
  const Topology h100 = load_topology("hgx-h100");
  const double step_s = P * (28 + 6) / (2 * 307.2e9 * kMemoryBoundFraction);
  CHECK(cpu_step_seconds(P / 8, cpu_step_bytes_per_element(8, 2), 8, 0, h100.host) == doctest::Approx(step_s));
  // One OpenMP thread per process (torchrun's OMP_NUM_THREADS=1): 8 cores at one core's STREAM rate.
  CHECK(cpu_step_seconds(P / 8, 34, 8, 1, h100.host) == doctest::Approx(P * 34 / (8 * 10e9)));
  int host_steps = 0, params_back = 0;
  for (const auto& t : z3.graph.tasks()) {
    if (t.category == TaskCategory::Optimizer && t.iteration == 1 && t.device == z3.ranks[0]) {
      CHECK(t.kind == TaskKind::Delay);
      CHECK(t.seconds == doctest::Approx(step_s));
      ++host_steps;
    }
    if (t.category == TaskCategory::Offload && t.kind == TaskKind::Transfer && t.iteration == 1 && t.dst == z3.ranks[0]) {
      CHECK(h100.device(t.src).kind == DeviceKind::Cpu);
      params_back += t.bytes == doctest::Approx(P / 8 * 2) ? 1 : 0;
    }
  }
  CHECK(host_steps == 1);
  CHECK(params_back == 1);
  // Memory: no optimizer states, fp32 copy or gradient partition on the GPU; stage 3 keeps its IPG
  // bucket, stage 2 the buffer of its largest tensor (the token embedding) for accumulation.
  const Plan z2 = plan_of(2, 1, 8, cpu);
  for (const Plan* p : {&z2, &z3})
    for (const auto& m : p->memory_curve)
      CHECK(m.optimizer == 0);
  CHECK(z3.memory_curve.front().grads == doctest::Approx(bucket));
  CHECK(z3.memory_curve.back().grads == doctest::Approx(bucket));
  CHECK(z2.memory_curve.back().grads == 0);
  // Stage 1 holds that buffer too (stage_1_and_2.py allocates temp_grad_buffer_for_gpu_offload under
  // `if self.cpu_offload` for both stages): the same workspace over the run without offload.
  const double embedding = 50257.0 * 768 * 2;  // gpt2's largest tensor, bf16
  for (const int stage : {1, 2}) {
    CAPTURE(stage);
    const Plan with = plan_of(stage, 1, 8, cpu), without = plan_of(stage, 1, 8, {{"device", "none"}});
    CHECK(with.memory_curve.front().other - without.memory_curve.front().other == doctest::Approx(embedding));
  }
  // One GPU still copies its gradients out and the parameters in; "none" offloads nothing.
  auto one = comm_of(plan_of(2, 1, 1, cpu));
  CHECK(one["gradients (ZeRO-Offload) GPU -> host"].bytes == doctest::Approx(P * 4));
  CHECK(comm_of(plan_of(2, 1, 8, {{"device", "none"}})).count("gradients (ZeRO-Offload) GPU -> host") == 0);
}

TEST_CASE("ZeRO: each gradient copied into its contiguous bucket once per reduction, but a tensor larger than the bucket")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const double wte = 38597376;  // GPT-2's token embedding: larger than a bucket of 1e7 elements, reduced where it is
  const GpuSpec& gpu = load_topology("hgx-h100").gpu;
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    const Plan p =
        plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7}}, 8), "s.json")).plan;
    double copies = 0;
    for (const auto& t : p.graph.tasks())
      if (t.category == TaskCategory::BucketCopy && t.iteration == 1 && t.device == p.ranks[0]) {
        CHECK(t.kind == TaskKind::Compute);  // the compute stream; stage 3 the reduction's, sharing the GPU
        copies += t.seconds;
      }
    // bf16 gradients, read and written once into the buckets; then every bucket divided in place
    // (stage_1_and_2.py average_tensor: tensor.div_; coalesced_collectives.py reduce_scatter_coalesced:
    // .div_(world_sz)) and flattened into a new tensor where the collective takes several: stages 1-2
    // the slices of the partitions a bucket touches (allreduce_bucket: self.flatten(bucket), a view of
    // a single one), stage 3 every bucket of more than one tensor (torch.cat; the token embedding alone
    // divides by 8 and is reduced where it is).
    double flattened = 0;
    if (stage == 3) {
      flattened = (P - wte) * 2;
    } else {
      double end = P;
      for (const Bucket& b : assign_capped_buckets(load_model("gpt2"), 2, 2e7)) {
        const double begin = end - b.bytes / 2;
        flattened += partition_slices(begin, end, P, 8).size() > 1 ? b.bytes : 0.0;
        end = begin;
      }
    }
    REQUIRE(flattened > 0);
    CHECK(copies == doctest::Approx(copy_seconds((P - wte) * 2, gpu) + copy_seconds(P * 2, gpu) + copy_seconds(flattened, gpu)));
  }
}

TEST_CASE("ZeRO-Offload with pin_memory false: each copy staged at one thread's memcpy rate, and compute waits for it")
{
  const auto scenario_of = [](const nlohmann::json& offload) {
    return parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", 2}, {"reduce_bucket_size", 1e7}, {"overlap_comm", true},
                                         {"offload_optimizer", offload}},
                                        8),
                          "s.json");
  };
  const nlohmann::json pinned = {{"device", "cpu"}}, pageable = {{"device", "cpu"}, {"pin_memory", false}};
  const Plan p = plan_scenario(scenario_of(pageable)).plan;
  const auto& tasks = p.graph.tasks();
  // Beside every transfer of the first rank, a delay of its bytes at kPinCopyBytesPerS after the same
  // tasks; a marker waits for both, and after a copy on the reduction's stream the next compute
  // waits for that marker (the call returns to the host only then).
  int staged = 0, blocking = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.category != TaskCategory::Offload || t.kind != TaskKind::Transfer || (t.src != p.ranks[0] && t.dst != p.ranks[0]))
      continue;
    const Task& staging = tasks[i + 1];
    REQUIRE(staging.kind == TaskKind::Delay);
    CHECK(staging.seconds == doctest::Approx(t.bytes / kPinCopyBytesPerS));
    CHECK(std::equal(staging.after.begin(), staging.after.end(), t.after.begin(), t.after.end()));
    const Task& done = tasks[i + 2];
    CHECK(done.category == TaskCategory::Marker);
    CHECK(std::find(done.after.begin(), done.after.end(), static_cast<int>(i)) != done.after.end());
    CHECK(std::find(done.after.begin(), done.after.end(), static_cast<int>(i + 1)) != done.after.end());
    ++staged;
    for (std::size_t j = i + 3; j < tasks.size(); ++j)
      if (tasks[j].kind == TaskKind::Compute && tasks[j].device == p.ranks[0]) {
        const auto& a = tasks[j].after;
        blocking += std::find(a.begin(), a.end(), static_cast<int>(i + 2)) != a.end() ? 1 : 0;
        break;
      }
  }
  CHECK(staged > 0);
  CHECK(blocking > 0);
  // Pinned buffers (DeepSpeed's default since 0.19.5) add no staging; pageable ones cost time.
  const Plan q = plan_scenario(scenario_of(pinned)).plan;
  CHECK(std::none_of(q.graph.tasks().begin(), q.graph.tasks().end(),
                     [](const Task& t) { return t.category == TaskCategory::Offload && t.kind == TaskKind::Delay && t.seconds > 0; }));
  CHECK(predict(scenario_of(pageable)).result.iteration_time_s > predict(scenario_of(pinned)).result.iteration_time_s);
}

TEST_CASE("ZeRO-3 + offload_optimizer: the updated parameters come back through a pageable copy even with pin_memory")
{
  // stage3.py _reassign_or_swap_out_partitioned_parameters: fp16_partitioned_groups_flat (bf16, GPU)
  // .copy_(fp32_partitioned_groups_flat (fp32, host)), blocking: PyTorch converts on the CPU into a new,
  // pageable tensor first (Copy.cu copy_kernel_cuda). Stages 1-2 copy from the pinned
  // param_buffer_of_bit16_for_cpu_offload_groups with non_blocking=True: no staging.
  const double P = static_cast<double>(load_model("gpt2").params());
  const auto plan_of = [](int stage) {
    return plan_scenario(parse_scenario(gpt2_scenario({{"kind", "zero"}, {"stage", stage}, {"reduce_bucket_size", 1e7},
                                                       {"offload_optimizer", {{"device", "cpu"}}}},
                                                      8),
                                        "s.json"))
        .plan;
  };
  for (const int stage : {2, 3}) {
    CAPTURE(stage);
    const Plan p = plan_of(stage);
    const auto& tasks = p.graph.tasks();
    int back = 0, staged = 0;
    for (std::size_t i = 0; i + 1 < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.category != TaskCategory::Offload || t.kind != TaskKind::Transfer || t.iteration != 1 || t.dst != p.ranks[0] ||
          t.bytes != doctest::Approx(P / 8 * 2))
        continue;
      ++back;
      staged += tasks[i + 1].kind == TaskKind::Delay && tasks[i + 1].seconds == doctest::Approx(t.bytes / kPinCopyBytesPerS) ? 1 : 0;
    }
    CHECK(back == 1);
    CHECK(staged == (stage == 3 ? 1 : 0));
  }
}

TEST_CASE("ZeRO-3's offload_param: each gather copies the rank's partitions in first, the parameters stay off the GPU")
{
  const double P = static_cast<double>(load_model("gpt2").params());
  const auto plan_of = [](int gpus, nlohmann::json extra) {
    nlohmann::json strategy = {{"kind", "zero"}, {"stage", 3}, {"stage3_prefetch_bucket_size", 0}, {"stage3_max_reuse_distance", 0}};
    strategy.update(extra);
    return plan_scenario(parse_scenario(gpt2_scenario(strategy, gpus), "s.json")).plan;
  };
  const nlohmann::json cpu = {{"device", "cpu"}};
  const Plan plain = plan_of(8, nlohmann::json::object()), params = plan_of(8, {{"offload_param", cpu}});
  auto c = comm_of(params);
  const CommGroup gathers = comm_of(plain)["parameters all_gather"];
  // One copy per gather, of its 1/8, in the same calls.
  CHECK(c["parameters (ZeRO-Offload) host -> GPU"].bytes == doctest::Approx(gathers.bytes / 8));
  CHECK(c["parameters (ZeRO-Offload) host -> GPU"].calls == gathers.calls);
  // The optimizer on the GPU writes its updated partition back to the host; with offload_optimizer
  // the step's copy is already there, and nothing goes back to the GPU after the step.
  CHECK(c["updated parameters (ZeRO-Offload) GPU -> host"].bytes == doctest::Approx(P / 8 * 2));
  auto both = comm_of(plan_of(8, {{"offload_param", cpu}, {"offload_optimizer", cpu}}));
  CHECK(both.count("updated parameters (ZeRO-Offload) GPU -> host") == 0);
  CHECK(both.count("updated parameters (ZeRO-Offload) host -> GPU") == 0);
  // No partition of the weights on the GPU: only what is gathered and the persistent tensors.
  CHECK(params.memory.front().params < plain.memory.front().params);
  // One GPU: the modules still come from the host, one copy per use, the whole model each way.
  auto one = comm_of(plan_of(1, {{"offload_param", cpu}}));
  CHECK(one.count("parameters all_gather") == 0);
  CHECK(one["parameters (ZeRO-Offload) host -> GPU"].bytes > P * 2);
}

TEST_CASE("sharded strategies: the report's memory curve peaks at the peak the memory table gives")
{
  for (const nlohmann::json& strategy :
       {fsdp(), fsdp({{"sharding", "no_shard"}}), fsdp({{"sharding", "shard_grad_op"}}), fsdp({{"tensor_parallel", 2}}),
        fsdp({{"version", 2}, {"tensor_parallel", 2}}), fsdp({{"tensor_parallel", 2}, {"replicate_embedding", true}}),
        nlohmann::json{{"kind", "zero"}, {"stage", 1}},
        nlohmann::json{{"kind", "zero"}, {"stage", 2}}, nlohmann::json{{"kind", "zero"}, {"stage", 3}}}) {
    CAPTURE(strategy.dump());
    const Plan p = plan_scenario(parse_scenario(gpt2_scenario(strategy, 8), "s.json")).plan;
    REQUIRE(p.memory_curve.size() > 2);
    CHECK(p.memory_curve_device == p.ranks.front());
    double top = 0;
    for (const auto& m : p.memory_curve)
      top = std::max(top, m.weights + m.grads + m.optimizer + m.activations + m.other);
    CHECK(top == doctest::Approx(p.memory.front().total()));
  }
}

TEST_CASE("sharded strategies and DDP: the one-GPU reference is one micro-batch, its optimizer step shared")
{
  // results.cpp divides training.batch_per_gpu (the micro-batch) by the one-GPU iteration: with 4
  // micro-steps per optimizer step the speedup and the one-GPU days must not grow 4 x. The one GPU
  // steps its optimizer once per optimizer step, as the replicas do, so a micro-batch carries 1/M of
  // it: from M = 1 to 2 the reference loses half a step, from 2 to 4 a quarter (a whole step per
  // micro-batch made DDP's scaling efficiency 121% at 8 micro-steps).
  for (const nlohmann::json& strategy :
       {fsdp(), nlohmann::json{{"kind", "zero"}, {"stage", 2}}, nlohmann::json{{"kind", "ddp"}}}) {
    CAPTURE(strategy.dump());
    const auto predicted = [&](int accumulation) {
      nlohmann::json doc = gpt2_scenario(strategy, 8);
      doc["training"]["global_batch"] = 8 * 4 * accumulation;
      return predict(parse_scenario(doc, "s.json"));
    };
    const Prediction one = predicted(1), two = predicted(2), four = predicted(4);
    const double s1 = one.plan.single_gpu_iteration_s, s2 = two.plan.single_gpu_iteration_s,
                 s4 = four.plan.single_gpu_iteration_s;
    CHECK(s4 < s2);
    CHECK(s2 < s1);
    CHECK(s1 - s2 == doctest::Approx(2 * (s2 - s4)).epsilon(0.01));
    CHECK(four.result.single_gpu_throughput == doctest::Approx(one.result.single_gpu_throughput).epsilon(0.1));
    CHECK(four.result.scaling_efficiency <= 1.0);
    CHECK(four.result.scaling_efficiency == doctest::Approx(one.result.scaling_efficiency).epsilon(0.1));
  }
}

TEST_CASE("sharded strategies: bad options exit 2 at their pointer")
{
  const auto error_of = [](const nlohmann::json& strategy, int gpus) {
    try {
      plan_scenario(parse_scenario(gpt2_scenario(strategy, gpus, 2), "s.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(fsdp({{"sharding", "half"}}), 8).find("at /strategy/sharding: expected one of") != std::string::npos);
  CHECK(error_of(fsdp({{"sharding", "hybrid_shard"}, {"shard_group_size", 5}}), 12).find("at /strategy/shard_group_size") !=
        std::string::npos);
  CHECK(error_of(fsdp({{"tensor_parallel", 5}}), 10).find("at /strategy/tensor_parallel: expected a tensor-parallel degree") !=
        std::string::npos);
  CHECK(error_of({{"kind", "zero"}, {"stage", 4}}, 8).find("at /strategy/stage") != std::string::npos);
  CHECK(error_of(fsdp({{"sharded_dtype", "fp16"}}), 8).find("at /strategy/sharded_dtype: expected sharded_dtype fp32 or bf16") !=
        std::string::npos);
  CHECK(error_of(fsdp({{"loss_parallel", false}}), 8).find("at /strategy/loss_parallel: expected loss_parallel only with") !=
        std::string::npos);
  CHECK(error_of({{"kind", "dp"}, {"sharding", "full_shard"}}, 8).find("at /strategy/sharding: unknown member") != std::string::npos);
  const nlohmann::json zero3 = {{"kind", "zero"}, {"stage", 3}};
  const auto offload = [&](const nlohmann::json& value, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json z = zero3;
    z["offload_optimizer"] = value;
    z.update(extra);
    return error_of(z, 16);
  };
  CHECK(offload("cpu").find("at /strategy/offload_optimizer: expected an object") != std::string::npos);
  CHECK(offload({{"device", "nvme"}}).find("at /strategy/offload_optimizer/device: expected \"cpu\" or \"none\"") != std::string::npos);
  CHECK(offload({{"device", "cpu"}, {"ratio", 0.5}}).find("at /strategy/offload_optimizer/ratio") != std::string::npos);
  CHECK(offload({{"device", "cpu"}, {"pin_memry", true}}).find("at /strategy/offload_optimizer/pin_memry") != std::string::npos);
  CHECK(offload({{"device", "cpu"}}, {{"mics_shard_size", 8}}).find("at /strategy/mics_shard_size") != std::string::npos);
  CHECK(error_of({{"kind", "zero"}, {"stage", 2}, {"offload_param", {{"device", "cpu"}}}}, 16)
            .find("at /strategy/offload_param: expected offload_param only with stage 3") != std::string::npos);
  CHECK(error_of({{"kind", "zero"}, {"stage", 3}, {"offload_param", {{"device", "nvme"}}}}, 16).find("at /strategy/offload_param/device") !=
        std::string::npos);
  nlohmann::json no_host = gpt2_scenario({{"kind", "zero"}, {"stage", 2}, {"offload_optimizer", {{"device", "cpu"}}}}, 2);
  no_host["cluster"] = {{"base", "pcie-box"}};
  CHECK_THROWS_WITH(plan_scenario(parse_scenario(no_host, "s.json")),
                    doctest::Contains("at /strategy/offload_optimizer: expected a cluster whose host gives memory_gbytes_per_s_per_socket"));
}

TEST_CASE("torchtitan's op-level selective checkpointing keeps less than Megatron's selective, more than full")
{
  const auto run_with = [](const char* ac) {
    nlohmann::json doc = gpt2_scenario(fsdp(), 8);
    doc["training"]["activation_checkpointing"] = ac;
    const Prediction p = plan_scenario(parse_scenario(doc, "s.json"));
    return std::make_pair(p.plan.memory.front().activations, p.plan.compute_per_iteration_s);
  };
  const auto none = run_with("none"), selective = run_with("selective"), op = run_with("selective_op"),
             full = run_with("full");
  CHECK(op.first < selective.first);
  CHECK(op.first > full.first);
  // recomputed: every second matmul of each layer (GPT-2: c_attn, c_proj, c_fc, c_proj -> the 2nd and 4th)
  CHECK(op.second > none.second);
  CHECK(op.second < full.second);
}

namespace {

/// GPT-2 on 8 H100s (one shard group) with `strategy` and `micro_steps` micro-steps per iteration.
Plan gpt2_on_8(const nlohmann::json& strategy, int micro_steps = 1)
{
  nlohmann::json s = gpt2_scenario(strategy, 8);
  s["training"]["global_batch"] = 4 * micro_steps * 8;
  return plan_scenario(parse_scenario(s, "s.json")).plan;
}

/// The input/output and workspace bytes of the plan's memory curve at `at` ("backward of lm_head").
double other_at(const Plan& p, const std::string& at)
{
  for (const auto& point : p.memory_curve)
    if (point.at == at)
      return point.other;
  FAIL("no moment " << at);
  return 0;
}

/// GPT-2's FSDP units, per GPU (no tensor parallelism): parameters of the root and of one block.
struct Gpt2Units {
  double root = 0, block = 0;
  double after_blocks = 0;  ///< the root's parameters after the last block (final norm, head)
};

Gpt2Units gpt2_units()
{
  const Model m = load_model("gpt2");
  const ShardUnits su = shard_units(m);
  Gpt2Units g;
  g.root = su.units.front().params;
  g.block = su.units.back().params;
  std::size_t last_block = 0;
  for (const auto& seg : su.segments)
    if (seg.unit != 0)
      last_block = std::max(last_block, seg.layers.last);
  for (std::size_t k = last_block; k < m.layers.size(); ++k)
    g.after_blocks += static_cast<double>(m.layers[k].params());
  return g;
}

constexpr double kCublasH100 = 2 * 32.0 * 1024 * 1024;  // cuBLAS + cuBLASLt workspaces on sm90

}  // namespace

TEST_CASE("FSDP1 without reshard after forward keeps its units gathered over no_sync micro-steps: one forward AllGather each")
{
  const auto U = static_cast<int>(shard_units(load_model("gpt2")).units.size());
  // _runtime_utils.py _should_free_in_backward: `state._sync_gradients or handle._sharding_strategy in
  // RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES`; the next forward's unshard finds them unsharded.
  const Plan kept = gpt2_on_8(fsdp({{"version", 1}, {"sharding", "shard_grad_op"}, {"no_sync", true}}), 4);
  CHECK(comm_of(kept)["parameters (forward) all_gather"].calls == U);
  CHECK(comm_of(kept)["gradients reduce_scatter"].calls == U);
  // full_shard frees in every backward, FSDP2 too (reshard_after_backward): every micro-step gathers.
  const Plan freed = gpt2_on_8(fsdp({{"version", 1}, {"no_sync", true}}), 4);
  CHECK(comm_of(freed)["parameters (forward) all_gather"].calls == 4 * U);
  const Plan v2 = gpt2_on_8(fsdp({{"sharding", "shard_grad_op"}, {"no_sync", true}}), 4);
  CHECK(comm_of(v2)["parameters (forward) all_gather"].calls == 4 * U);
  // The graph issues them once per iteration too.
  const auto forward_gathers = [](const Plan& p) {
    return std::count_if(p.graph.tasks().begin(), p.graph.tasks().end(), [&p](const auto& t) {
      const std::string name = t.name.get();
      return t.category == TaskCategory::AllGather && t.iteration == 1 && t.device == p.ranks[0] &&
             name.find("start-up") != std::string::npos && name.find("(forward)") != std::string::npos;
    });
  };
  CHECK(forward_gathers(freed) == 4 * forward_gathers(kept));
  // Offloaded, pre_unshard still copies each shard in from the host (no no-op branch under offload).
  const Plan offload =
      gpt2_on_8(fsdp({{"version", 1}, {"sharding", "shard_grad_op"}, {"no_sync", true}, {"cpu_offload", true}}), 4);
  CHECK(comm_of(offload)["parameters (forward) all_gather"].calls == U);
  CHECK(comm_of(offload)["parameter shards (CPU offload) host -> GPU"].calls == 4 * U);
  // Memory: every unit stays gathered through a no_sync micro-step's backward, where one micro-step frees
  // each unit in its post-backward.
  const Gpt2Units g = gpt2_units();
  const Plan once = gpt2_on_8(fsdp({{"version", 1}, {"sharding", "shard_grad_op"}}));
  const std::string at = "backward of transformer.h.5.attn.c_attn";
  CHECK(other_at(kept, at) - other_at(once, at) == doctest::Approx(6 * g.block * 2));  // blocks 6-11, bf16
}

TEST_CASE("FSDP frees its gathered units and unsharded gradients before the optimizer step")
{
  // FSDP1 _post_backward_reshard and _catch_all_reshard; FSDP2's final callback reshards every group.
  for (const auto& strategy :
       {fsdp(), fsdp({{"version", 1}}), fsdp({{"sharding", "shard_grad_op"}}), fsdp({{"version", 1}, {"sharding", "shard_grad_op"}}),
        fsdp({{"reshard_after_forward", 2}}), fsdp({{"version", 1}, {"sharding", "shard_grad_op"}, {"no_sync", true}}),
        fsdp({{"cpu_offload", true}})}) {
    CAPTURE(strategy.dump());
    const Plan p = gpt2_on_8(strategy, strategy.value("no_sync", false) ? 4 : 1);
    CHECK(other_at(p, "the optimizer step") == doctest::Approx(kCublasH100).epsilon(0.01));  // and the batch's tokens
  }
}

TEST_CASE("FSDP's unsharded gradients: in backward only, a unit's in the parameter and reduce dtypes, the root's to the end")
{
  const Gpt2Units g = gpt2_units();
  const Plan p = gpt2_on_8(fsdp());  // FSDP2, bf16 parameters, fp32 reduction
  const double step = other_at(p, "the optimizer step"), root_b = g.root * 2, block_b = g.block * 2;
  // The loss: the root gathered, no gradient yet (the loss's backward produces the logits' only).
  CHECK(other_at(p, "the loss's backward (fp32 logit gradients)") - step == doctest::Approx(root_b));
  // Forward: the root and the limiter's two units, no gradient.
  CHECK(other_at(p, "forward of transformer.h.5.attn.c_attn") - step == doctest::Approx(root_b + 2 * block_b));
  // A block's backward: the root, the block and the one prefetched, the block's bf16 gradients, the fp32
  // copy of block 6's that foreach_reduce made (kept in reduce_scatter_state until block 5's
  // post_backward), the head's and final norm's gradients (the root's post_backward runs last).
  CHECK(other_at(p, "backward of transformer.h.5.attn.c_attn") - step ==
        doctest::Approx(root_b + 2 * block_b + g.block * (2 + 4) + g.after_blocks * 2));
  // The embedding's backward ends the root's: all its gradients beside the root and block 0's fp32 copy
  // (reduce_scatter_state), then, the root re-sharded, its gradients in bf16 and their fp32 copy.
  CHECK(other_at(p, "backward of transformer.wte") - step ==
        doctest::Approx(std::max(root_b + g.root * 2 + g.block * 4, g.root * (2 + 4))));
  // no_sync over 4 micro-steps: the new gradients are added to the accumulated fp32 ones (gradients, not
  // workspace) before the copy, and no reduce_scatter_input is kept where the accumulated ones are alive.
  const Plan acc = gpt2_on_8(fsdp({{"no_sync", true}}), 4);
  CHECK(other_at(acc, "backward of transformer.wte") - other_at(acc, "the optimizer step") ==
        doctest::Approx(std::max(root_b + g.root * 2, g.root * 4)));
  CHECK(other_at(acc, "backward of transformer.h.5.attn.c_attn") - other_at(acc, "the optimizer step") ==
        doctest::Approx(root_b + 2 * block_b + g.block * 2 + g.after_blocks * 2));
  // FSDP1 casts to the reduce dtype only where it differs (_post_backward_hook).
  const Plan same = gpt2_on_8(fsdp({{"version", 1}, {"mixed_precision", {{"param_dtype", "bf16"}, {"reduce_dtype", "bf16"}}}}));
  CHECK(other_at(same, "backward of transformer.wte") - other_at(same, "the optimizer step") ==
        doctest::Approx(root_b + g.root * 2));
}

TEST_CASE("FSDP1's backward gathers the current unit and at most one prefetched, whatever limit_all_gathers and forward_prefetch")
{
  const Gpt2Units g = gpt2_units();
  const double block_b = g.block * 2;
  const std::string back = "backward of transformer.h.5.attn.c_attn", fwd = "forward of transformer.h.5.attn.c_attn";
  const Plan pre = gpt2_on_8(fsdp({{"version", 1}}));
  // limit_all_gathers bounds forward's run-ahead only (_pre_backward_hook unshards one unit, prefetches one).
  const Plan unlimited = gpt2_on_8(fsdp({{"version", 1}, {"limit_all_gathers", false}}));
  CHECK(other_at(unlimited, back) == doctest::Approx(other_at(pre, back)));
  CHECK(other_at(unlimited, fwd) - other_at(pre, fwd) == doctest::Approx(10 * block_b));  // all 12 blocks, not 2
  // backward_post frees this unit before prefetching the next (_post_backward_reshard then _prefetch_handle),
  // none prefetches nothing: one unit at a time, one fewer than backward_pre.
  const Plan post = gpt2_on_8(fsdp({{"version", 1}, {"backward_prefetch", "backward_post"}}));
  const Plan none = gpt2_on_8(fsdp({{"version", 1}, {"backward_prefetch", "none"}}));
  CHECK(other_at(pre, back) - other_at(post, back) == doctest::Approx(block_b));
  CHECK(other_at(none, back) == doctest::Approx(other_at(post, back)));
  // forward_prefetch: one more unit in forward, none in backward.
  const Plan ahead = gpt2_on_8(fsdp({{"version", 1}, {"forward_prefetch", true}}));
  CHECK(other_at(ahead, fwd) - other_at(pre, fwd) == doctest::Approx(block_b));
  CHECK(other_at(ahead, back) == doctest::Approx(other_at(pre, back)));
}
