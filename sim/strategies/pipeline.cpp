#include "sim/strategies/pipeline.hpp"
#include "sim/strategies/compute_time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

std::vector<std::pair<bool, int>> stage_schedule(PipelineSchedule schedule, int stage, int stages, int microbatches)
{
  std::vector<std::pair<bool, int>> ops;
  if (schedule == PipelineSchedule::GPipe) {
    for (int i = 0; i < microbatches; ++i)
      ops.emplace_back(false, i);
    for (int i = microbatches; i-- > 0;)  // autograd walks the micro-batches back in reverse
      ops.emplace_back(true, i);
    return ops;
  }
  const int warm = std::min(stages - stage - 1, microbatches);
  for (int i = 0; i < warm; ++i)
    ops.emplace_back(false, i);
  for (int i = 0; i < microbatches - warm; ++i) {
    ops.emplace_back(false, warm + i);
    ops.emplace_back(true, i);
  }
  for (int i = microbatches - warm; i < microbatches; ++i)
    ops.emplace_back(true, i);
  return ops;
}

namespace {

void parse_common(const JsonReader& o, ParallelConfig& c, const Model& model, int batch)
{
  // Each micro-batch is a copy of every stage's tasks in the plan; 1024 is beyond published pipeline
  // runs (GPipe: up to 32, Megatron-LM: a few hundred per step) and keeps the plan within memory.
  c.microbatches = o.count_or("microbatches", 1, 1024);
  if (c.microbatches > batch)  // a micro-batch holds at least one sample of the replica's batch
    o.at("microbatches").fail(fmt::format("expected at most the batch of {} samples (training.batch_per_gpu), got {}",
                                          batch, c.microbatches));
  if (o.has("schedule"))
    c.schedule = o.at("schedule").as_choice({"gpipe", "1f1b"}) == "1f1b" ? PipelineSchedule::OneFOneB
                                                                          : PipelineSchedule::GPipe;
  c.half_efficiency_samples = half_efficiency_samples_of(o);
  if (const auto b = o.find("balance")) {
    std::vector<std::size_t> balance;
    for (const auto& item : b->items())
      balance.push_back(static_cast<std::size_t>(item.as_count(static_cast<int>(model.layers.size()))));
    if (static_cast<int>(balance.size()) != c.stages)
      b->fail(fmt::format("expected {} entries (one per pipeline stage), got {}", c.stages, balance.size()));
    c.ranges = partition_explicit(model, balance, *b);
  }
}

}  // namespace

Plan build_pipeline_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                         int warmup, const CollectiveOptions& collectives)
{
  const JsonReader o = scenario.strategy_options();
  o.reject_unknown({"kind", "microbatches", "schedule", "balance", "half_efficiency_samples"});
  ParallelConfig c;
  c.stages = scenario.gpus;
  parse_common(o, c, model, scenario.training.batch_per_gpu);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

Plan build_hybrid_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                       int warmup, const CollectiveOptions& collectives)
{
  const JsonReader o = scenario.strategy_options();
  o.reject_unknown({"kind", "tensor_parallel", "pipeline_stages", "microbatches", "schedule", "balance",
                    "bucket_cap_mb", "half_efficiency_samples"});
  ParallelConfig c;
  // Each is at most the GPUs of the scenario; the bound keeps their product within an int.
  c.tensor = o.count_or("tensor_parallel", 1, scenario.gpus);
  c.stages = o.count_or("pipeline_stages", 1, scenario.gpus);
  const int per_replica = c.tensor * c.stages;
  if (scenario.gpus % per_replica != 0)
    scenario.reader().at("gpus").fail(fmt::format(
        "expected a multiple of tensor_parallel x pipeline_stages = {} x {} = {} GPUs, got {}", c.tensor, c.stages,
        per_replica, scenario.gpus));
  c.data = scenario.gpus / per_replica;
  c.bucket_cap_mb = o.positive_or("bucket_cap_mb", c.bucket_cap_mb);
  parse_common(o, c, model, scenario.training.batch_per_gpu);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

}  // namespace dtsim
