// See simulation_settings.hpp.
#include "sim/predict/simulation_settings.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace dtsim {

namespace {

// Where "auto" folds ranks (RankMode): from 64 GPUs, where the full run of a Megatron or FSDP plan
// takes seconds to minutes on this project's 2-core machine (llama3-70b-h100-64gpu 7.7 s,
// llama3-70b-hsdp-tp-h100-256gpu 87 s, a 3,072-GPU GPT 1T 675 s) and the folded one a fraction of
// a second to 21 s. The cross-check (tests/unit/rank_folding_cross_check.cpp) and the shipped
// scenarios give the same iteration time folded and in full (to 6 digits where no two different
// communications share a link). Builders without the symmetry (single, dp, ddp, pipeline) ignore it.
constexpr int kFoldFromGpus = 64;

// Below kFoldFromGpus, "auto" folds an FSDP run whose unfolded plan is large: its collectives' transfers
// grow with the square of the ranks (a ring's steps x its ranks), with the micro-steps (FSDP1 and
// FSDP2 gather and reduce every unit in each) and with the layers (units and their compute pieces).
// From kFoldFsdpFromWork of gpus^2 x micro-steps x layers on: Llama 3 8B (323 layers) on 32 H100 with
// 8 micro-steps is 2.6 M (6.5 s and 2.5 GB unfolded on this project's 2-core machine), MPT 70B on 32
// H100 with 16 micro-steps 13 M (39 s and 7.9 GB; folded 0.2 s, the same iteration to 6 digits); a
// single micro-step of Llama 3 8B on 32 GPUs (0.33 M, 1 s) and the FSDP goldens stay below it. Every
// validation table gives the same figures as before this rule. ZeRO's plan grows the same way (a fetch
// per module, a ReduceScatter per bucket): a 500-block inline Llama with ZeRO-3 on 16 A100 (5,003
// layers, 1.3 M) took 20.6 s and 6.1 GB unfolded, 0.17 s and 52 MB folded, the same iteration.
constexpr double kFoldFsdpFromWork = 1e6;

// ZeRO-3's plan is an order of magnitude heavier for the same product: a fetch (AllGather) per module
// with parameters in forward and again in backward, each over every rank, where FSDP gathers a whole
// block at once. Measured unfolded on this project's 2-core machine (idle; MPT models as llm-foundry
// builds them, 7 layers per block, A100 80 GB nodes of 8, micro-batch 1, full recomputation):
// 1B on 16 GPUs (4.4e4) 1.9 s, 7B (5.8e4) 3.7 s, 13B (7.3e4) 4.0 s and 0.54 GB, 70B (1.4e5) 9.5 s
// and 1.3 GB, 13B with 4 micro-steps (2.9e5) 8.4 s, 13B on 32 GPUs (2.9e5) 13 s and 1.8 GB; 30B on
// 48 (7.8e5) took 219 s and 4.5 GB beside another run (session 37's probe), folded 0.81 s and 70 MB,
// the same iteration to every printed digit. ZeRO-1 and 2 (bucketed reductions) stay under the FSDP
// rule: 13B on 32 GPUs 0.69 s unfolded. scenarios/llama2-13b-zero3-a100-16gpu.json (1.03e5, 3.8 s)
// stays unfolded.
constexpr double kFoldZero3FromWork = 1.2e5;

/// A ZeRO run at stage 3 (an invalid stage is the builder's error to report, not this rule's).
bool zero_stage3(const Scenario& s)
{
  if (s.strategy_spec.kind != StrategyKind::Zero)
    return false;
  const auto stage = s.strategy_options().find("stage");
  return stage && stage->json().is_number_integer() && stage->json().get<std::int64_t>() == 3;
}

// A hybrid run's unfolded plan grows with the same product, several times more slowly (its
// collectives are a transformer layer's few tensor-parallel ones, not a unit's gathers over every
// rank): a 1,000-block inline Llama (10,003 layers) with TP 8 x PP 2 on 16 A100 and 8 micro-batches
// (2.05e7) took 9.6 s and 2.75 GB unfolded, 0.60 s and 112 MB folded, the same iteration (5.316534 s),
// and 10,000 blocks outgrew this project's 24 GB machine; 100 blocks (2.05e6) took 1.05 s and 287 MB.
// From about 1.3 GB on. Every Megatron validation row below 64 GPUs stays far below it (at most 2.5e5).
constexpr double kFoldHybridFromWork = 1e7;

}  // namespace

bool auto_folds(const Scenario& s, const Model& model)
{
  if (s.gpus >= kFoldFromGpus)
    return true;
  const double n = s.gpus;
  const double work = n * n * s.training.batch.accumulation * static_cast<double>(model.layers.size());
  const StrategyKind kind = s.strategy_spec.kind;
  return (zero_stage3(s) && work >= kFoldZero3FromWork) ||
         ((kind == StrategyKind::Fsdp || kind == StrategyKind::Zero) && work >= kFoldFsdpFromWork) ||
         (kind == StrategyKind::Hybrid && work >= kFoldHybridFromWork);
}

SimulationSettings parse_simulation_settings(const Scenario& s)
{
  SimulationSettings out;
  const auto r = s.reader().find("simulation");
  if (!r)
    return out;
  r->reject_unknown({"iterations", "warmup", "collectives", "ranks"});
  if (r->has("ranks")) {
    const std::string mode = r->at("ranks").as_choice({"auto", "all", "representatives"});
    out.ranks = mode == "all" ? RankMode::All : mode == "representatives" ? RankMode::Representatives : RankMode::Auto;
    // Only these plans fold their ranks (parallel_builder.cpp, sharded_run.cpp): elsewhere it would be ignored.
    const StrategyKind kind = s.strategy_spec.kind;
    if (out.ranks == RankMode::Representatives && kind != StrategyKind::Hybrid && kind != StrategyKind::Fsdp &&
        kind != StrategyKind::Zero)
      r->at("ranks").fail(fmt::format("expected \"all\" or \"auto\" for strategy.kind {}: only hybrid, fsdp and zero runs "
                                      "fold their ranks into representatives",
                                      to_string(kind)));
  }
  if (r->has("collectives")) {
    const std::string mode = r->at("collectives").as_choice({"auto", "full", "replay"});
    out.collectives = mode == "full" ? CollectiveMode::Full : mode == "replay" ? CollectiveMode::Replay : CollectiveMode::Auto;
  }
  out.warmup = r->count_or("warmup", out.warmup, 99);  // fewer than the at most 100 iterations below
  out.iterations = r->count_or("iterations", out.iterations);
  out.iterations_given = r->has("iterations");
  if (out.iterations <= out.warmup)
    r->at("iterations").fail(fmt::format("expected more iterations than warm-up ({}), got {}", out.warmup, out.iterations));
  if (out.iterations > 100)
    r->at("iterations").fail(fmt::format("expected at most 100 simulated iterations, got {}", out.iterations));
  // Every iteration repeats each micro-batch (pipeline) or accumulation step (DDP) in the plan: the
  // bound keeps the largest plans (1024 of them on 32 GPUs, 4 iterations: 15 s) within a minute.
  const int repeats = s.training.batch.accumulation;
  if (out.iterations * repeats > 4096)
    r->at("iterations").fail(fmt::format("expected at most {} iterations with {} micro-batches or accumulation steps "
                                         "each (4096 in all), got {}", 4096 / repeats, repeats, out.iterations));
  return out;
}

}  // namespace dtsim
