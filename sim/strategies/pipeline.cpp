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

int RankOrder::index(int d, int s, int t, int D, int P, int T) const
{
  int index = 0, stride = 1;
  for (const ParallelDim dim : inner_to_outer) {
    const int value = dim == ParallelDim::Tensor ? t : dim == ParallelDim::Data ? d : s;
    index += value * stride;
    stride *= dim == ParallelDim::Tensor ? T : dim == ParallelDim::Data ? D : P;
  }
  return index;
}

RankOrder parse_rank_order(const JsonReader& value)
{
  const std::string text =
      value.as_choice({"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"});
  RankOrder order;
  for (std::size_t k = 0; k < 3; ++k) {
    const std::string dim = text.substr(3 * k, 2);
    order.inner_to_outer[k] = dim == "tp" ? ParallelDim::Tensor : dim == "dp" ? ParallelDim::Data : ParallelDim::Pipeline;
  }
  return order;
}

namespace {

void parse_common(const JsonReader& o, ParallelConfig& c, const Model& model, const TrainingSpec& training)
{
  // The micro-batches of one optimizer step are the scenario's (sim/scenario resolves them from
  // training.micro_batch and global_batch, or strategy.microbatches, at most 1024).
  c.microbatches = training.batch.accumulation;
  const auto batch = training.batch_per_gpu;
  if (c.microbatches > batch)  // a micro-batch holds at least one sample of the replica's batch
    o.at("microbatches").fail(fmt::format("expected at most the batch of {} samples (training.batch_per_gpu), got {}",
                                          batch, c.microbatches));
  if (o.has("schedule"))
    c.schedule = o.at("schedule").as_choice({"gpipe", "1f1b"}) == "1f1b" ? PipelineSchedule::OneFOneB
                                                                          : PipelineSchedule::GPipe;
  c.half_efficiency_samples = half_efficiency_samples_of(o);
  const bool transformer = !transformer_layers(model).empty();
  if (const auto b = o.find("balance")) {
    std::vector<std::size_t> balance;
    for (const auto& item : b->items())
      balance.push_back(static_cast<std::size_t>(item.as_count(static_cast<int>(model.layers.size()))));
    if (static_cast<int>(balance.size()) != c.stages)
      b->fail(fmt::format("expected {} entries (one per pipeline stage), got {}", c.stages, balance.size()));
    c.ranges = transformer ? partition_transformer(model, balance, *b) : partition_explicit(model, balance, *b);
  } else if (transformer && c.stages > 1) {
    c.ranges = partition_transformer_even(model, c.stages, o.has("pipeline_stages") ? o.at("pipeline_stages") : o);
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
  parse_common(o, c, model, scenario.training);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

Plan build_hybrid_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                       int warmup, const CollectiveOptions& collectives)
{
  const JsonReader o = scenario.strategy_options();
  o.reject_unknown({"kind", "tensor_parallel", "pipeline_stages", "microbatches", "schedule", "balance",
                    "bucket_cap_mb", "half_efficiency_samples", "rank_order", "sequence_parallel",
                    "distributed_optimizer"});
  ParallelConfig c;
  c.tensor = scenario.strategy_spec.tensor;  // read with the scenario (its degrees are checked there)
  c.stages = scenario.strategy_spec.stages;
  c.data = scenario.strategy_spec.data;
  c.bucket_cap_mb = o.positive_or("bucket_cap_mb", c.bucket_cap_mb);
  if (const auto order = o.find("rank_order"))
    c.order = parse_rank_order(*order);
  c.sequence_parallel = o.bool_or("sequence_parallel", false);
  c.distributed_optimizer = o.bool_or("distributed_optimizer", false);
  parse_common(o, c, model, scenario.training);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

}  // namespace dtsim
