// Megatron-LM's model parallelism as the plan builds it: the tensor-parallel collectives per
// transformer layer (two forward, two backward; ReduceScatter + AllGather pairs with sequence
// parallelism; the vocabulary-parallel embedding and cross entropy), recomputation, the even split
// by transformer layer, the rank layout, the tied embedding's gradient and the distributed optimizer.
#include "sim/model/model.hpp"
#include "sim/predict/predict.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/strategies/pipeline.hpp"
#include "sim/util/input_error.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace dtsim;

namespace {

LayerTimes unit_times(const Model& model)
{
  LayerTimes t;
  for (const auto& l : model.layers) {
    t.fwd.push_back(l.fwd_flops * 1e-12);
    t.bwd.push_back(2 * l.fwd_flops * 1e-12);
  }
  return t;
}

std::map<CollectiveOp, int> count(const std::vector<StagePiece>& pieces, bool backward)
{
  std::map<CollectiveOp, int> n;
  for (const auto& p : pieces)
    for (const auto& c : backward ? p.after_bwd : p.after_fwd)
      ++n[c.op];
  return n;
}

const JsonReader& nowhere()
{
  static const nlohmann::json doc = nlohmann::json::object();
  static const JsonReader r(doc, "s.json");
  return r;
}

nlohmann::json gpt2_scenario(const nlohmann::json& strategy, int gpus)
{
  return {{"cluster", {{"base", "hgx-h100"}, {"nodes", 2}}},
          {"model", "gpt2"},
          {"training",
           {{"dataset_samples", 100000}, {"micro_batch", 4}, {"epochs", 1}, {"precision", "bf16"},
            {"optimizer", "adam"}, {"compute", {{"efficiency", 0.4}}}}},
          {"strategy", strategy},
          {"gpus", gpus},
          {"simulation", {{"iterations", 2}, {"warmup", 1}}}};
}

}  // namespace

TEST_CASE("tensor parallel: two AllReduces per transformer layer each way, plus embedding and cross entropy")
{
  const Model gpt2 = load_model("gpt2");  // 12 layers, tied head
  const auto layers = transformer_layers(gpt2);
  REQUIRE(layers.size() == 12);
  const LayerTimes t = unit_times(gpt2);
  const StageRange whole{0, gpt2.layers.size()};
  const auto pieces = stage_pieces(gpt2, t, whole, 2, 2, {2, false, ActivationCheckpointing::None});
  // forward: 2 per layer + the embedding's + the cross entropy's three reductions
  CHECK(count(pieces, false)[CollectiveOp::AllReduce] == 2 * 12 + 1 + 3);
  // backward: 2 per layer + the output layer's input gradient
  CHECK(count(pieces, true)[CollectiveOp::AllReduce] == 2 * 12 + 1);
  // a layer's AllReduce carries its hidden states: 1024 tokens x 768 x micro 2 x 2 bytes
  CHECK(pieces[1].after_fwd.front().bytes == doctest::Approx(1024.0 * 768 * 2 * 2));
  double fwd = 0;
  for (const auto& p : pieces)
    fwd += p.fwd_s;
  CHECK(fwd == doctest::Approx(t.fwd_total() / 2));

  const auto sp = stage_pieces(gpt2, t, whole, 2, 2, {2, true, ActivationCheckpointing::None});
  CHECK(count(sp, false)[CollectiveOp::ReduceScatter] == 2 * 12 + 1);
  CHECK(count(sp, false)[CollectiveOp::AllGather] == 2 * 12 + 1);

  const auto one = stage_pieces(gpt2, t, whole, 2, 2, {1, false, ActivationCheckpointing::None});
  REQUIRE(one.size() == 1);
  CHECK(one[0].after_fwd.empty());
  CHECK(one[0].fwd_s == doctest::Approx(t.fwd_total()));
}

TEST_CASE("DTensor's tensor parallelism copies the whole tensor around each AllGather and ReduceScatter")
{
  const Model gpt2 = load_model("gpt2");
  const LayerTimes t = unit_times(gpt2);
  const StageRange whole{0, gpt2.layers.size()};
  const double per_byte = 1e-9;
  const auto bytes_of = [](const std::vector<TpCollective>& list) {
    double b = 0;
    for (const auto& c : list)
      b += c.op == CollectiveOp::AllGather || c.op == CollectiveOp::ReduceScatter ? c.bytes : 0.0;
    return b;
  };
  for (const ActivationCheckpointing policy : {ActivationCheckpointing::None, ActivationCheckpointing::Full}) {
    CAPTURE(static_cast<int>(policy));
    TensorParallelOptions tp{2, true, policy};
    const auto plain = stage_pieces(gpt2, t, whole, 2, 2, tp);
    tp.chunk_cat_s_per_byte = per_byte;
    const auto copied = stage_pieces(gpt2, t, whole, 2, 2, tp);
    REQUIRE(plain.size() == copied.size());
    double total = 0;
    for (std::size_t k = 0; k < plain.size(); ++k) {
      const StagePiece &a = plain[k], &b = copied[k];
      const double fwd = per_byte * bytes_of(a.after_fwd);
      CHECK(b.fwd_s == doctest::Approx(a.fwd_s + fwd));
      CHECK(b.recompute_s == doctest::Approx(a.recompute_s + (a.recompute_collectives ? fwd : 0.0)));
      CHECK(b.bwd_s - b.bwd_after_s ==
            doctest::Approx(a.bwd_s - a.bwd_after_s + per_byte * (bytes_of(a.before_bwd) + bytes_of(a.after_bwd))));
      CHECK(b.chunk_cat_s == doctest::Approx((b.fwd_s + b.bwd_s + b.recompute_s) - (a.fwd_s + a.bwd_s + a.recompute_s)));
      total += b.chunk_cat_s;
    }
    CHECK(total > 0);
  }
  // Without sequence parallelism the layers' collectives are AllReduces: nothing to copy (the loss
  // parallel cross entropy's are AllReduces too).
  TensorParallelOptions ar{2, false, ActivationCheckpointing::None};
  ar.chunk_cat_s_per_byte = per_byte;
  for (const auto& p : stage_pieces(gpt2, t, whole, 2, 2, ar))
    CHECK(p.chunk_cat_s == 0);
  // ... but the logits gathered whole (loss_parallel false) are sharded on the vocabulary: one copy.
  ar.loss_parallel = false;
  double logits = 0;
  for (const auto& p : stage_pieces(gpt2, t, whole, 2, 2, ar))
    logits += p.chunk_cat_s;
  CHECK(logits == doctest::Approx(per_byte * 1024.0 * 50257 * 2 * 2));
}

TEST_CASE("Megatron's backward overlap: each column-parallel linear's collectives beside its GEMMs")
{
  const Model gpt2 = load_model("gpt2");
  const LayerTimes t = unit_times(gpt2);
  const StageRange whole{0, gpt2.layers.size()};
  const std::vector<bool> row = row_parallel_linears(gpt2);
  const int head = output_layer(gpt2);
  double column_bwd = 0;  // QKV, MLP up and the output layer, one tensor rank
  for (std::size_t i = 0; i < gpt2.layers.size(); ++i)
    if (gpt2.layers[i].kind == "linear" && !row[i] && (static_cast<int>(i) == head || gpt2.layers[i].name.find(".h.") != std::string::npos))
      column_bwd += t.bwd[i] / 2;
  std::map<CollectiveOp, int> beside, before, after;
  double beside_s = 0, bwd = 0;
  for (const auto& p : stage_pieces(gpt2, t, whole, 2, 2, {2, false, ActivationCheckpointing::None, true})) {
    for (const auto& b : p.beside) {
      ++beside[b.collective.op];
      beside_s += b.compute_s;
    }
    for (const auto& c : p.before_bwd)
      ++before[c.op];
    for (const auto& c : p.after_bwd)
      ++after[c.op];
    CHECK(p.bwd_main_s() >= 0);
    CHECK(p.bwd_main_s() + p.bwd_after_s + (p.beside.empty() ? 0 : p.beside[0].compute_s) == doctest::Approx(p.bwd_s));
    bwd += p.bwd_s;
  }
  // Without sequence parallelism: the input gradient's AllReduce beside the weight-gradient GEMM
  // (half the linear's backward), nothing exposed; the row-parallel linears' backward sends nothing.
  CHECK(beside[CollectiveOp::AllReduce] == 2 * 12 + 1);
  CHECK(beside_s == doctest::Approx(column_bwd / 2));
  CHECK(before.empty());
  CHECK(after.empty());
  CHECK(bwd == doctest::Approx(t.bwd_total() / 2));

  beside.clear();
  before.clear();
  after.clear();
  beside_s = 0;
  for (const auto& p : stage_pieces(gpt2, t, whole, 2, 2, {2, true, ActivationCheckpointing::None, true})) {
    for (const auto& b : p.beside) {
      ++beside[b.collective.op];
      beside_s += b.compute_s;
    }
    for (const auto& c : p.before_bwd)
      ++before[c.op];
    CHECK(p.after_bwd.empty());
  }
  // With it: the layer input's AllGather beside the input-gradient GEMM and the gradient's
  // ReduceScatter beside the weight-gradient GEMM; exposed, the AllGather of each row-parallel
  // linear's output gradient.
  CHECK(beside[CollectiveOp::AllGather] == 2 * 12 + 1);
  CHECK(beside[CollectiveOp::ReduceScatter] == 2 * 12 + 1);
  CHECK(beside_s == doctest::Approx(column_bwd));
  CHECK(before[CollectiveOp::AllGather] == 2 * 12);
}

TEST_CASE("recomputation: full re-runs the layers' forward and collectives, selective the core attention")
{
  const Model gpt2 = load_model("gpt2");
  const LayerTimes t = unit_times(gpt2);
  const StageRange whole{0, gpt2.layers.size()};
  double block_fwd = 0, core_fwd = 0;
  for (const auto& b : transformer_layers(gpt2))
    for (std::size_t i = b.first; i < b.last; ++i) {
      block_fwd += t.fwd[i];
      if (gpt2.layers[i].kind == "attention")
        core_fwd += t.fwd[i];
    }
  double full = 0, selective = 0;
  int recomputed_collectives = 0;
  for (const auto& p : stage_pieces(gpt2, t, whole, 1, 2, {2, false, ActivationCheckpointing::Full})) {
    full += p.recompute_s;
    recomputed_collectives += p.recompute_collectives ? static_cast<int>(p.after_fwd.size()) : 0;
  }
  for (const auto& p : stage_pieces(gpt2, t, whole, 1, 2, {2, false, ActivationCheckpointing::Selective})) {
    selective += p.recompute_s;
    CHECK(!p.recompute_collectives);
  }
  CHECK(full == doctest::Approx(block_fwd / 2));
  CHECK(recomputed_collectives == 2 * 12);
  CHECK(selective == doctest::Approx(core_fwd / 2));
}

TEST_CASE("a data-parallel replica's recomputation: each block layer's forward again in its own backward")
{
  const Model gpt2 = load_model("gpt2");
  const LayerTimes t = unit_times(gpt2);
  std::vector<bool> in_block(gpt2.layers.size(), false);
  for (const auto& b : transformer_layers(gpt2))
    for (std::size_t i = b.first; i < b.last; ++i)
      in_block[i] = true;
  const LayerTimes none = with_recomputation(gpt2, t, ActivationCheckpointing::None);
  const LayerTimes full = with_recomputation(gpt2, t, ActivationCheckpointing::Full);
  const LayerTimes selective = with_recomputation(gpt2, t, ActivationCheckpointing::Selective);
  for (std::size_t i = 0; i < gpt2.layers.size(); ++i) {
    CAPTURE(gpt2.layers[i].name);
    CHECK(none.bwd[i] == t.bwd[i]);
    CHECK(full.fwd[i] == t.fwd[i]);
    CHECK(full.bwd[i] == doctest::Approx(t.bwd[i] + (in_block[i] ? t.fwd[i] : 0.0)));
    CHECK(selective.bwd[i] == doctest::Approx(t.bwd[i] + (gpt2.layers[i].kind == "attention" ? t.fwd[i] : 0.0)));
  }
  // Block by block, what stage_pieces re-runs on one tensor rank, for every policy.
  for (const auto policy : {ActivationCheckpointing::Full, ActivationCheckpointing::Selective, ActivationCheckpointing::SelectiveOp}) {
    const LayerTimes with = with_recomputation(gpt2, t, policy);
    for (const auto& b : transformer_layers(gpt2)) {
      double pieces = 0, layers = 0;
      for (const auto& p : stage_pieces(gpt2, t, b, 1, 2, {1, false, policy}))
        pieces += p.recompute_s;
      for (std::size_t i = b.first; i < b.last; ++i)
        layers += with.bwd[i] - t.bwd[i];
      CHECK(layers == doctest::Approx(pieces));
      CHECK(layers > 0);
    }
  }
}

TEST_CASE("torchtitan's layer-level selective recomputation: every n-th block re-runs its forward, as stage_pieces does")
{
  CHECK(recomputes_block(0, 1));
  CHECK(!recomputes_block(0, 2));  // torchtitan's counter: the 2nd, 4th, ... blocks
  CHECK(recomputes_block(1, 2));
  CHECK(recomputes_block(5, 3));
  CHECK(!recomputes_block(6, 3));
  const Recomputation every_second{ActivationCheckpointing::Full, 2};
  CHECK(std::string(every_second.name()) == "selective_layer");
  CHECK(!every_second.every_layer());
  CHECK(!every_second.recomputes_whole(0));
  CHECK(every_second.recomputes_whole(1));
  CHECK(Recomputation(ActivationCheckpointing::Full).every_layer());
  CHECK(std::string(Recomputation(ActivationCheckpointing::Full).name()) == "full");
  CHECK(!Recomputation(ActivationCheckpointing::Selective, 2).recomputes_whole(1));  // whole layers under Full only
  CHECK(!Recomputation{}.any());
  CHECK(std::string(Recomputation{}.name()) == "none");
  const Model gpt2 = load_model("gpt2");
  const LayerTimes t = unit_times(gpt2);
  const auto blocks = transformer_layers(gpt2);
  for (const int every : {2, 3, 12, 13}) {
    CAPTURE(every);
    const LayerTimes with = with_recomputation(gpt2, t, {ActivationCheckpointing::Full, every});
    const LayerTimes full = with_recomputation(gpt2, t, ActivationCheckpointing::Full);
    int recomputed = 0;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      double layers = 0, pieces = 0;
      for (std::size_t i = blocks[k].first; i < blocks[k].last; ++i)
        layers += with.bwd[i] - t.bwd[i];
      const TensorParallelOptions tp{1, false, {ActivationCheckpointing::Full, every}};
      for (const auto& p : stage_pieces(gpt2, t, blocks[k], 1, 2, tp))
        pieces += p.recompute_s;
      CHECK(layers == doctest::Approx(pieces));
      double whole = 0;
      for (std::size_t i = blocks[k].first; i < blocks[k].last; ++i)
        whole += full.bwd[i] - t.bwd[i];
      const bool again = (k + 1) % static_cast<std::size_t>(every) == 0;
      CHECK(layers == doctest::Approx(again ? whole : 0.0));
      recomputed += again ? 1 : 0;
    }
    CHECK(recomputed == static_cast<int>(blocks.size()) / every);  // GPT-2's 12 blocks
  }
}

TEST_CASE("Megatron's split: layers evenly, embeddings first, head last; balance counts transformer layers")
{
  const Model gpt2 = load_model("gpt2");
  const auto blocks = transformer_layers(gpt2);
  const auto even = partition_transformer_even(gpt2, 4, nowhere());
  REQUIRE(even.size() == 4);
  CHECK(even[0].first == 0);
  CHECK(even[0].last == blocks[2].last);  // embeddings + 3 layers
  CHECK(even[1].first == blocks[3].first);
  CHECK(even[3].last == gpt2.layers.size());  // ln_f and the head on the last stage
  CHECK_THROWS_AS(partition_transformer_even(gpt2, 5, nowhere()), InputError);
  const auto uneven = partition_transformer(gpt2, {2, 4, 4, 2}, nowhere());
  CHECK(uneven[1].first == blocks[2].first);
  CHECK_THROWS_AS(partition_transformer(gpt2, {2, 4, 4, 3}, nowhere()), InputError);
  CHECK(transformer_layers(load_model("resnet50")).empty());
  CHECK(tied_embeddings(gpt2));
  CHECK(tied_embeddings(load_model("bert-large")));  // its MLM decoder keeps a bias of its own
  CHECK_FALSE(tied_embeddings(load_model("llama3-8b")));
  CHECK_FALSE(tied_embeddings(load_model("resnet50")));
}

TEST_CASE("rank order: Megatron's tp-dp-pp keeps tensor groups in a node and puts stages outermost")
{
  const RankOrder megatron;
  // 2 replicas, 4 stages, 8 tensor ranks: tp innermost, then dp, then pp
  CHECK(megatron.index(0, 0, 7, 2, 4, 8) == 7);
  CHECK(megatron.index(1, 0, 0, 2, 4, 8) == 8);
  CHECK(megatron.index(0, 1, 0, 2, 4, 8) == 16);
  const nlohmann::json v = "tp-pp-dp";
  const RankOrder seed = parse_rank_order(JsonReader(v, "s.json"));
  CHECK(seed.index(1, 0, 0, 2, 4, 8) == 32);
  CHECK(seed.index(0, 1, 0, 2, 4, 8) == 8);
}

TEST_CASE("hybrid plan: per-layer TP collectives, embedding gradient sync and the distributed optimizer")
{
  const nlohmann::json strategy = {{"kind", "hybrid"}, {"tensor_parallel", 4}, {"pipeline_stages", 2},
                                   {"microbatches", 2}, {"schedule", "1f1b"}};
  const Prediction p = plan_scenario(parse_scenario(gpt2_scenario(strategy, 16), "s.json"));
  int tp_calls = 0, embedding = 0, grads = 0;
  for (const auto& c : p.plan.comm_per_iteration) {
    if (c.label.find("tensor-parallel") != std::string::npos)
      tp_calls += c.calls;
    if (c.label.find("embedding") != std::string::npos)
      ++embedding;
    if (c.op == "all_reduce" && c.label.find("gradients") != std::string::npos && c.label.find("embedding") == std::string::npos)
      ++grads;
  }
  // per micro-batch: 4 per layer x 12 layers, the embedding's 1, the head's 3 + 1; 2 micro-batches
  CHECK(tp_calls == 2 * (4 * 12 + 1 + 4));
  CHECK(embedding == 1);
  CHECK(grads == 2);

  nlohmann::json zero1 = strategy;
  zero1["distributed_optimizer"] = true;
  const Prediction z = plan_scenario(parse_scenario(gpt2_scenario(zero1, 16), "s.json"));
  int rs = 0, ag = 0;
  for (const auto& c : z.plan.comm_per_iteration) {
    rs += c.op == "reduce_scatter" ? 1 : 0;
    ag += c.op == "all_gather" ? 1 : 0;
  }
  CHECK(rs == 2);
  CHECK(ag == 2);
  CHECK(z.plan.memory.front().optimizer == doctest::Approx(p.plan.memory.front().optimizer / 2));
}

TEST_CASE("hybrid's schedule is Megatron's 1F1B unless strategy.schedule says gpipe; pipeline's stays GPipe")
{
  // Megatron-LM never runs GPipe: megatron/core/pipeline_parallel/schedules.py get_forward_backward_func
  // picks forward_backward_pipelining_without_interleaving (1F1B), or the interleaved one, when
  // pipeline_model_parallel_size > 1. torch's Pipe (kind pipeline) runs GPipe.
  const auto run = [](const nlohmann::json& strategy) {
    return plan_scenario(parse_scenario(gpt2_scenario(strategy, 2), "s.json")).plan;
  };
  const auto schedule_of = [](const Plan& plan) {
    for (const auto& n : plan.notes)
      if (const auto at = n.find(", schedule "); at != std::string::npos)
        return n.substr(at + 11);
    FAIL("no schedule note");
    return std::string();
  };
  const nlohmann::json hybrid = {{"kind", "hybrid"}, {"pipeline_stages", 2}, {"microbatches", 4}};
  nlohmann::json one_f_one_b = hybrid, gpipe = hybrid, interleaved = hybrid;
  one_f_one_b["schedule"] = "1f1b";
  gpipe["schedule"] = "gpipe";
  interleaved["virtual_stages"] = 2;  // no schedule named: interleaved 1F1B, as Megatron's virtual pipeline
  const Plan by_default = run(hybrid), named = run(one_f_one_b), g = run(gpipe);
  CHECK(schedule_of(by_default) == "1F1B");
  CHECK(schedule_of(g) == "GPipe");
  CHECK(schedule_of(run(interleaved)).rfind("interleaved 1F1B", 0) == 0);
  CHECK(schedule_of(run({{"kind", "pipeline"}, {"microbatches", 4}})) == "GPipe");
  // Stage 0 holds min(p - s, m) = 2 micro-batches' activations under 1F1B, all 4 under GPipe.
  REQUIRE(!by_default.memory.empty());
  CHECK(by_default.memory.front().activations == doctest::Approx(named.memory.front().activations));
  CHECK(g.memory.front().activations > 1.5 * by_default.memory.front().activations);
}

TEST_CASE("the last stage owns a copy of the tied word embedding; bf16 gradients are reduced in fp32")
{
  const Model gpt2 = load_model("gpt2");
  const double P = static_cast<double>(gpt2.params()), wte = static_cast<double>(gpt2.layers.front().params());
  const auto split = partition_transformer_even(gpt2, 2, nowhere());
  const double first = params_in(gpt2, split[0].first, split[0].last), last = params_in(gpt2, split[1].first, split[1].last);
  REQUIRE(first + last == doctest::Approx(P));
  const nlohmann::json strategy = {{"kind", "hybrid"}, {"tensor_parallel", 4}, {"pipeline_stages", 2},
                                   {"microbatches", 2}, {"schedule", "1f1b"}};
  const Prediction p = plan_scenario(parse_scenario(gpt2_scenario(strategy, 16), "s.json"));
  std::map<std::string, double> bytes;
  for (const auto& c : p.plan.comm_per_iteration)
    bytes[c.label] = c.bytes;
  // Megatron's main_grad buffer: fp32 for bf16 runs (arguments.py), so 4 bytes per element.
  CHECK(bytes["stage 0 gradients"] == doctest::Approx(first / 4 * 4));
  CHECK(bytes["stage 1 gradients"] == doctest::Approx((last + wte) / 4 * 4));  // the output layer's copy too
  CHECK(bytes["embedding gradients (first and last stage)"] == doctest::Approx(wte / 4 * 4));
  // Ranks tp-dp-pp: stage 1 is the outer half. Weights, gradients and states of the copy on its GPUs.
  const GpuMemory &a = p.plan.memory.front(), &b = p.plan.memory.back();
  CHECK(b.params / a.params == doctest::Approx((last + wte) / first));
  CHECK(b.optimizer / a.optimizer == doctest::Approx((last + wte) / first));
}

TEST_CASE("fp16: Megatron's gradient buffer is fp16; the step reads an fp32 copy of the share it steps")
{
  // arguments.py forces accumulate_allreduce_grads_in_fp32 for bf16 only; param_and_grad_buffer.py's
  // grad_dtype is then the parameters' (fp16). optimizer.py _copy_model_grads_to_main_grads makes the
  // fp32 main_param.grad at the step (distrib_optimizer.py: of the 1/dp shard).
  const auto run = [](const char* precision, bool distributed) {
    nlohmann::json doc = gpt2_scenario({{"kind", "hybrid"}, {"tensor_parallel", 4}, {"pipeline_stages", 2},
                                        {"microbatches", 2}, {"schedule", "1f1b"}, {"distributed_optimizer", distributed}},
                                       16);
    doc["training"]["precision"] = precision;
    return plan_scenario(parse_scenario(doc, "s.json")).plan;
  };
  const Plan bf16 = run("bf16", false), fp16 = run("fp16", false), fp16_dist = run("fp16", true);
  for (const Plan* p : {&bf16, &fp16, &fp16_dist})
    REQUIRE(p->memory_curve.size() > 2);
  // Through forward and backward: 2 B per parameter under fp16, 4 under bf16.
  CHECK(fp16.memory_curve.front().grads == doctest::Approx(bf16.memory_curve.front().grads / 2));
  // At the step: the fp32 copy beside the buffer, of every parameter (3 x the buffer), of 1/dp = 1/2
  // of them with the distributed optimizer (2 x); bf16's buffer is already fp32 (.float() copies nothing).
  CHECK(fp16.memory_curve.back().grads == doctest::Approx(3 * fp16.memory_curve.front().grads));
  CHECK(fp16_dist.memory_curve.back().grads == doctest::Approx(2 * fp16_dist.memory_curve.front().grads));
  CHECK(bf16.memory_curve.back().grads == doctest::Approx(bf16.memory_curve.front().grads));
  // The data-parallel traffic reduces the same buffer: 2 B per element.
  const Model gpt2 = load_model("gpt2");
  const auto split = partition_transformer_even(gpt2, 2, nowhere());
  for (const auto& c : fp16.comm_per_iteration)
    if (c.label == "stage 0 gradients")
      CHECK(c.bytes == doctest::Approx(params_in(gpt2, split[0].first, split[0].last) / 4 * 2));
}

TEST_CASE("pipeline sends: s x b x h per tensor rank, 1/t of it with sequence parallelism")
{
  // schedules.py get_tensor_shapes: the sequence is divided by the tensor group's size only under
  // config.sequence_parallel; each tensor rank sends (seq, micro_batch, hidden).
  const auto send = [](bool sp) {
    const Plan p = plan_scenario(parse_scenario(gpt2_scenario({{"kind", "hybrid"}, {"tensor_parallel", 4}, {"pipeline_stages", 2},
                                                                {"microbatches", 2}, {"schedule", "1f1b"}, {"sequence_parallel", sp}},
                                                               16),
                                                "s.json"))
                         .plan;
    for (const auto& c : p.comm_per_iteration)
      if (c.label == "stage 0->1 activations")
        return c.bytes;
    FAIL("no stage 0->1 send");
    return 0.0;
  };
  const double whole = 2 * 4.0 * 1024 * 768 * 2;  // 2 micro-batches of 4 x 1024 tokens x 768, bf16
  CHECK(send(false) == doctest::Approx(whole));
  CHECK(send(true) == doctest::Approx(whole / 4));
}

TEST_CASE("scatter_gather_tensors_in_pipeline: 1/t per tensor rank between stages, gathered over the tensor group")
{
  // Megatron-LM 2021-2022 (Narayanan et al. SC21 section 4.1; megatron/p2p_communication.py _communicate at
  // NVIDIA/Megatron-LM 5942af978a): unless args.sequence_parallel, each tensor rank sends its
  // split_tensor_into_1d_equal_chunks share, and the receiver's gather_split_1d_tensor AllGathers the whole
  // tensor over the tensor-model-parallel group before the forward (or backward) step uses it.
  // gpt3-350m (16 heads) on 2 HGX H100 nodes: TP 8 in a node, stage 0 on node 0, stage 1 on node 1.
  struct Sends {
    std::vector<double> activation_bytes;      ///< each forward send's transfer, iteration 1
    int gathers_in = 0, gathers_back = 0;      ///< AllGather tasks of the inputs (stage 1) / gradients (stage 0)
    int gathers_on_wrong_stage = 0;
    bool forward_after_gather = false;         ///< stage 1's first forward waits on its input's gather
    std::map<std::string, double> traffic;     ///< comm_per_iteration bytes by label
  };
  const auto run = [](int tp, bool sp, bool sg) {
    nlohmann::json doc = gpt2_scenario({{"kind", "hybrid"}, {"tensor_parallel", tp}, {"pipeline_stages", 2}, {"microbatches", 2},
                                        {"sequence_parallel", sp}, {"scatter_gather_tensors_in_pipeline", sg}},
                                       2 * tp);
    doc["model"] = "gpt3-350m";
    doc["training"]["micro_batch"] = 1;
    const Prediction p = plan_scenario(parse_scenario(doc, "s.json"));
    Sends out;
    const auto& tasks = p.plan.graph.tasks();
    const int half = static_cast<int>(p.plan.ranks.size()) / 2;  // tp-dp-pp: stage 1 is the outer half
    const auto stage_of = [&](int device) {
      for (std::size_t r = 0; r < p.plan.ranks.size(); ++r)
        if (p.plan.ranks[r] == device)
          return static_cast<int>(r) < half ? 0 : 1;
      return -1;
    };
    std::set<int> gather_tasks;
    for (std::size_t id = 0; id < tasks.size(); ++id) {
      const Task& t = tasks[id];
      if (t.iteration != 1)
        continue;
      const std::string name(t.name);
      if (t.kind == TaskKind::Transfer && t.category == TaskCategory::Activation)
        out.activation_bytes.push_back(t.bytes);
      const bool in = name.find("pipeline input gather") != std::string::npos;
      const bool back = name.find("pipeline gradient gather") != std::string::npos;
      if (!in && !back)
        continue;
      gather_tasks.insert(static_cast<int>(id));
      const int stage = stage_of(t.kind == TaskKind::Transfer ? t.dst : t.device);
      out.gathers_in += in ? 1 : 0;
      out.gathers_back += back ? 1 : 0;
      out.gathers_on_wrong_stage += (in && stage != 1) || (back && stage != 0) ? 1 : 0;
    }
    for (const auto& t : tasks)
      if (t.iteration == 1 && t.category == TaskCategory::Forward && std::string(t.name).find("micro-batch 0 stage 1 tp 0") != std::string::npos) {
        for (const int dep : t.after)
          out.forward_after_gather = out.forward_after_gather || gather_tasks.count(dep) > 0;
        break;
      }
    for (const auto& c : p.plan.comm_per_iteration)
      out.traffic[c.label] = c.bytes;
    return out;
  };
  const double whole = 1.0 * 2048 * 1024 * 2;  // micro-batch 1 x 2048 tokens x hidden 1024, bf16
  const Sends on = run(8, false, true), off = run(8, false, false), sp = run(8, true, true), sp_off = run(8, true, false),
              one = run(1, false, true), one_off = run(1, false, false);
  // On: every forward send is 1/8 of the activation, and each stage receiving one gathers it whole.
  REQUIRE(!on.activation_bytes.empty());
  for (const double b : on.activation_bytes)
    CHECK(b == doctest::Approx(whole / 8));
  CHECK(on.gathers_in > 0);
  CHECK(on.gathers_back > 0);
  CHECK(on.gathers_on_wrong_stage == 0);
  CHECK(on.forward_after_gather);
  CHECK(on.traffic.at("stage 0->1 activations") == doctest::Approx(2 * whole / 8));
  CHECK(on.traffic.at("stage 0->1 activations gather") == doctest::Approx(2 * whole));  // all_gather: the whole tensor
  CHECK(on.traffic.at("stage 1->0 gradients gather") == doctest::Approx(2 * whole));
  // Off (current Megatron-LM): the whole tensor from every tensor rank, no gather.
  for (const double b : off.activation_bytes)
    CHECK(b == doctest::Approx(whole));
  CHECK(off.gathers_in + off.gathers_back == 0);
  CHECK(off.traffic.count("stage 0->1 activations gather") == 0);
  // Sequence parallel: the sends are 1/t of the sequence already; the option changes nothing.
  CHECK(sp.activation_bytes == sp_off.activation_bytes);
  for (const double b : sp.activation_bytes)
    CHECK(b == doctest::Approx(whole / 8));
  CHECK(sp.gathers_in + sp.gathers_back == 0);
  CHECK(sp.traffic == sp_off.traffic);
  // One tensor rank: nothing to split.
  CHECK(one.activation_bytes == one_off.activation_bytes);
  for (const double b : one.activation_bytes)
    CHECK(b == doctest::Approx(whole));
  CHECK(one.gathers_in + one.gathers_back == 0);
  CHECK(one.traffic == one_off.traffic);
}

TEST_CASE("Megatron's DataLoaders run on tensor rank 0 of the first and last stages only")
{
  // GPT-3 175B, TP 8 inside each node, PP 8: a node is one stage of one replica, 8 processes, of
  // which one loads on the first and last stages' nodes. With every worker busy (1 s of CPU per
  // sample), 4 workers on such a node, not 32.
  std::ifstream in(std::string(DTSIM_TESTS_DIR) + "/../scenarios/gpt3-175b-h100-128gpu.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["training"]["loader"] = {{"workers", 4}, {"per_sample_ms", 1000}};
  doc["cluster"]["host"] = {{"cores", 16}};
  const Prediction p = plan_scenario(parse_scenario(doc, "s.json"));
  REQUIRE(p.plan.host.modelled);
  // 4 workers, 8 NCCL proxies, the main threads waiting for batches.
  CHECK(p.plan.host.busy_threads < 16);
  CHECK(p.plan.host.busy_threads > 12);
  // Each process on cores of its own (gpu_affinity's socket_unique): the loading one runs its 4
  // workers on its own 2 cores, not an eighth of them.
  doc["training"]["loader"]["affinity"] = "socket_unique";
  const Prediction unique = plan_scenario(parse_scenario(doc, "s.json"));
  CHECK(unique.plan.host.cores == 2);
  CHECK(unique.plan.host.busy_threads > 4);
}

TEST_CASE("per pipeline stage, the parts of one GPU's iteration add up to the iteration")
{
  nlohmann::json strategy = {{"kind", "hybrid"}, {"tensor_parallel", 2}, {"pipeline_stages", 2},
                             {"microbatches", 4}, {"schedule", "1f1b"}};
  nlohmann::json doc = gpt2_scenario(strategy, 8);
  doc["training"]["activation_checkpointing"] = "full";
  const Prediction p = predict(parse_scenario(doc, "s.json"));
  REQUIRE(p.result.stages.size() == 2);
  for (const auto& s : p.result.stages) {
    const double sum = s.forward_s + s.backward_s + s.recompute_s + s.optimizer_s + s.tensor_parallel_s + s.pipeline_s +
                       s.data_parallel_s + s.waiting_s;
    CHECK(sum == doctest::Approx(p.result.iteration_time_s).epsilon(1e-9));
    CHECK(s.recompute_s > 0);
    CHECK(s.tensor_parallel_s > 0);
    CHECK(s.forward_s > 0);
  }
  CHECK(p.result.stages[1].pipeline_s > 0);  // its gradients go back to stage 0
}

namespace {

// Eight transformer layers of one attention row each, one-element activations (transfers cost only
// link latency), for the interleaved schedule's closed form.
std::string eight_layer_transformer()
{
  const std::string path = (std::filesystem::temp_directory_path() / "dtsim-megatron-eight-layers.json").string();
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    layers.push_back({{"name", "h" + std::to_string(i) + ".core"}, {"kind", "attention"}, {"params", {1000}},
                      {"fwd_flops", 1e9}, {"activation_elems", 1}, {"buffer_elems", 0}, {"block", "h" + std::to_string(i)}});
  std::ofstream(path) << nlohmann::json{{"name", "eight"}, {"source", "test"}, {"input_elems", 1}, {"layers", layers}}.dump();
  return path;
}

}  // namespace

TEST_CASE("interleaved 1F1B: Megatron's order, and the bubble shrinks to (p-1)/(v m+p-1)")
{
  // Stage 0 of 4 with 2 chunks and 8 micro-batches: (4-0-1)*2 + (2-1)*4 = 10 warm-up forwards,
  // micro-batches 0-3 through chunk 0, then 0-3 through chunk 1, then 4, 5 through chunk 0.
  const auto ops = interleaved_schedule(0, 4, 8, 2);
  REQUIRE(ops.size() == 32);
  for (int k = 0; k < 10; ++k)
    CHECK_FALSE(ops[static_cast<std::size_t>(k)].backward);
  CHECK(ops[4].chunk == 1);
  CHECK(ops[4].micro == 0);
  CHECK(ops[8].chunk == 0);
  CHECK(ops[8].micro == 4);
  CHECK(ops[11].backward);  // the first backward: micro-batch 0 through the last chunk
  CHECK(ops[11].chunk == 1);
  CHECK(ops[11].micro == 0);
  // the last stage starts its backwards after (2 - 1) * 4 warm-up forwards
  CHECK(interleaved_schedule(3, 4, 8, 2)[5].backward);

  // Micro-batches alive per chunk at the stage's heaviest moment: stage 0's 10 warm-up forwards and
  // one more, 0-3 and 8-10 through chunk 0, 4-7 through chunk 1: 7 + 4 = 11, p v + p - 1 chunk passes,
  // theoretical_memory_usage.py's p (1 + (p - 1) / (p v)) micro-batches of the stage; stage 3 4 + 1
  // (the chunk with the loss starts its backwards at once). As many micro-batches as stages: only the
  // stages whose warm-up reaches every forward run them all first (current schedules.py
  // get_pp_rank_microbatches; the 2022 code ran every stage so). The chunks differ: so do their
  // activations (below).
  ParallelConfig cfg;
  cfg.stages = 4;
  cfg.microbatches = 8;
  cfg.schedule = PipelineSchedule::OneFOneB;
  cfg.virtual_stages = 2;
  const std::vector<double> even{1, 1};
  CHECK(micro_batches_in_flight(cfg, 0, even) == std::vector<int>{7, 4});
  CHECK(micro_batches_in_flight(cfg, 3, even) == std::vector<int>{4, 1});
  CHECK(micro_batches_in_flight(cfg, 0, {1, 7}) == std::vector<int>{7, 4});
  cfg.microbatches = 4;  // warm-ups 10, 8, 6 and 4 of 8 chunk passes
  CHECK(micro_batches_in_flight(cfg, 0, even) == std::vector<int>{4, 4});
  CHECK(micro_batches_in_flight(cfg, 1, even) == std::vector<int>{4, 4});
  CHECK(micro_batches_in_flight(cfg, 2, even) == std::vector<int>{4, 3});
  CHECK(micro_batches_in_flight(cfg, 3, even) == std::vector<int>{4, 1});
  CHECK(interleaved_schedule(3, 4, 4, 2)[5].backward);
  cfg.virtual_stages = 1;
  cfg.microbatches = 8;
  for (int s = 0; s < 4; ++s)
    CHECK(micro_batches_in_flight(cfg, s, {1}) == std::vector<int>{4 - s});
  cfg.microbatches = 2;
  CHECK(micro_batches_in_flight(cfg, 0, {1}) == std::vector<int>{2});
  cfg.schedule = PipelineSchedule::GPipe;
  CHECK(micro_batches_in_flight(cfg, 3, {1}) == std::vector<int>{2});

  const std::string model = eight_layer_transformer();
  for (const auto& pmv : {std::array{2, 4, 2}, std::array{4, 8, 2}, std::array{2, 2, 4}}) {
    const int p = pmv[0], m = pmv[1], v = pmv[2];
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    const nlohmann::json doc = {
        {"cluster", "dgx1-v100"},
        {"model", model},
        {"training",
         {{"dataset_samples", 1000}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "fp32"},
          {"compute", {{"step_time_s", 1.0}, {"jitter_cv", 0}}}}},
        {"strategy", {{"kind", "hybrid"}, {"pipeline_stages", p}, {"microbatches", m}, {"schedule", "1f1b"},
                      {"virtual_stages", v}}},
        {"gpus", p},
        {"simulation", {{"iterations", 3}, {"warmup", 1}}}};
    const auto r = predict(parse_scenario(doc, "test.json")).result;
    CHECK(r.iteration_time_s == doctest::Approx(static_cast<double>(v * m + p - 1) / (p * m * v)).epsilon(0.002));
  }
  std::remove(model.c_str());

  // Stage 0's first chunk holds 7 micro-batches, its second 4: 7 of its 8 layers in the first hold
  // more than 7 in the second (Megatron's balance per virtual stage).
  const auto first_stage_activations = [](const nlohmann::json& balance) {
    const nlohmann::json doc = {
        {"cluster", {{"base", "hgx-h100"}, {"nodes", 1}}},
        {"model", {{"family", "gpt"}, {"hidden", 1024}, {"layers", 32}, {"heads", 16}, {"seq_len", 1024}, {"vocab", 51200}}},
        {"training",
         {{"dataset_samples", 1000}, {"micro_batch", 1}, {"global_batch", 8}, {"epochs", 1}, {"precision", "bf16"},
          {"compute", {{"efficiency", 0.5}}}}},
        {"strategy", {{"kind", "hybrid"}, {"pipeline_stages", 4}, {"schedule", "1f1b"}, {"virtual_stages", 2}, {"balance", balance}}},
        {"gpus", 4}};
    return plan_scenario(parse_scenario(doc, "s.json")).plan.memory.front().activations;
  };
  const double heavy_first = first_stage_activations({7, 7, 7, 7, 1, 1, 1, 1});
  const double balanced = first_stage_activations({4, 4, 4, 4, 4, 4, 4, 4});
  const double heavy_second = first_stage_activations({1, 1, 1, 1, 7, 7, 7, 7});
  CHECK(heavy_first > 1.2 * balanced);
  CHECK(heavy_second < 0.85 * balanced);
}
