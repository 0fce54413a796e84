#include "sim/strategies/pipeline.hpp"

#include "sim/scenario/strategy_members.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/megatron_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

std::vector<ChunkOp> interleaved_schedule(int stage, int stages, int microbatches, int chunks)
{
  const int total = microbatches * chunks;
  const int group = stages * chunks;
  // get_model_chunk_id and get_microbatch_id_in_model_chunk of schedules.py
  const auto op = [&](int k, bool backward) {
    const int in_group = k % group;
    const int chunk = in_group / stages;
    return ChunkOp{backward, (k / group) * stages + k % stages, backward ? chunks - 1 - chunk : chunk};
  };
  // megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches: (p - rank - 1) * 2 +
  // (chunks - 1) * group warm-up forwards, all of them only when that reaches the total. Its 2022 form
  // also ran every forward first when the micro-batches equalled the stages (get_num_microbatches() ==
  // pipeline_parallel_size); current Megatron-LM has dropped that case.
  const int warm = std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
  std::vector<ChunkOp> ops;
  for (int k = 0; k < warm; ++k)
    ops.push_back(op(k, false));
  for (int k = 0; k < total - warm; ++k) {
    ops.push_back(op(k + warm, false));
    ops.push_back(op(k, true));
  }
  for (int k = total - warm; k < total; ++k)
    ops.push_back(op(k, true));
  return ops;
}

std::vector<int> micro_batches_in_flight(const ParallelConfig& config, int stage, const std::vector<double>& chunk_weights)
{
  const int P = config.stages, M = config.microbatches, C = config.virtual_stages;
  std::vector<ChunkOp> ops;
  if (C > 1)
    ops = interleaved_schedule(stage, P, M, C);
  else
    for (const auto& [backward, micro] : stage_schedule(config.schedule, stage, P, M))
      ops.push_back({backward, micro, 0});
  std::vector<int> alive(static_cast<std::size_t>(C), 0), most = alive;
  double heaviest = -1;
  for (const ChunkOp& op : ops) {
    alive[static_cast<std::size_t>(op.chunk)] += op.backward ? -1 : 1;
    double weight = 0;
    for (std::size_t c = 0; c < alive.size(); ++c)
      weight += alive[c] * (c < chunk_weights.size() ? chunk_weights[c] : 1.0);
    if (weight > heaviest) {
      heaviest = weight;
      most = alive;
    }
  }
  return most;
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

std::string to_string(const RankOrder& order)
{
  std::string out;
  for (const ParallelDim dim : order.inner_to_outer)
    out += std::string(out.empty() ? "" : "-") + (dim == ParallelDim::Tensor ? "tp" : dim == ParallelDim::Data ? "dp" : "pp");
  return out;
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
  const int v = c.virtual_stages;
  if (v > 1) {  // Megatron's interleaved 1F1B: its conditions (schedules.py, transformer_block.py)
    const auto where = o.at("virtual_stages");
    if (c.schedule != PipelineSchedule::OneFOneB || c.stages < 2 || !transformer)
      where.fail(fmt::format("expected 1 unless the schedule is 1f1b over 2 or more pipeline stages of a transformer "
                             "(interleaved 1F1B), got {}", v));
    if (c.microbatches % c.stages != 0)
      where.fail(fmt::format("interleaving needs micro-batches that are a multiple of the {} pipeline stages, got {} "
                             "micro-batches", c.stages, c.microbatches));
    const auto layers = transformer_layers(model).size();
    if (!o.has("balance") && layers % static_cast<std::size_t>(c.stages * v) != 0)
      where.fail(fmt::format("expected pipeline_stages x virtual_stages to divide model \"{}\"'s {} transformer layers "
                             "(Megatron splits them evenly), got {} x {} = {}; or give balance per virtual stage",
                             model.name, layers, c.stages, v, c.stages * v));
  }
  const int virtual_total = c.stages * v;
  if (const auto b = o.find("balance")) {
    std::vector<std::size_t> balance;
    for (const auto& item : b->items())
      balance.push_back(static_cast<std::size_t>(item.as_count(static_cast<int>(model.layers.size()))));
    if (static_cast<int>(balance.size()) != virtual_total)
      b->fail(v > 1 ? fmt::format("expected {} entries (one per virtual stage: {} stages x {} chunks), got {}",
                                  virtual_total, c.stages, v, balance.size())
                    : fmt::format("expected {} entries (one per pipeline stage), got {}", c.stages, balance.size()));
    c.ranges = transformer ? partition_transformer(model, balance, *b) : partition_explicit(model, balance, *b);
  } else if (transformer && c.stages > 1) {
    c.ranges = partition_transformer_even(
        model, virtual_total, v > 1 ? o.at("virtual_stages") : o.has("pipeline_stages") ? o.at("pipeline_stages") : o);
  }
}

}  // namespace

Plan build_pipeline_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                         int warmup, const CollectiveOptions& collectives)
{
  const JsonReader o = scenario.strategy_options();
  reject_unknown_strategy_members(o);
  ParallelConfig c;
  c.stages = scenario.gpus;
  parse_common(o, c, model, scenario.training);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

Plan build_hybrid_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations,
                       int warmup, const CollectiveOptions& collectives)
{
  const JsonReader o = scenario.strategy_options();
  reject_unknown_strategy_members(o);
  ParallelConfig c;
  c.tensor = scenario.strategy_spec.tensor;  // read with the scenario (its degrees are checked there)
  c.stages = scenario.strategy_spec.stages;
  c.data = scenario.strategy_spec.data;
  c.bucket_cap_mb = o.positive_or("bucket_cap_mb", c.bucket_cap_mb);
  if (const auto order = o.find("rank_order"))
    c.order = parse_rank_order(*order);
  c.sequence_parallel = o.bool_or("sequence_parallel", false);
  c.distributed_optimizer = o.bool_or("distributed_optimizer", false);
  c.tp_backward_overlap = o.bool_or("tp_backward_overlap", true);
  c.scatter_gather_tensors_in_pipeline = o.bool_or("scatter_gather_tensors_in_pipeline", false);
  c.megatron = true;
  // Megatron-LM never runs GPipe: megatron/core/pipeline_parallel/schedules.py get_forward_backward_func
  // picks forward_backward_pipelining_without_interleaving (1F1B), or the interleaved one with
  // virtual stages, when pipeline_model_parallel_size > 1, and forward_backward_no_pipelining (one
  // forward then its backward per micro-batch: 1F1B's order on one stage) otherwise. "gpipe" stays
  // selectable with strategy.schedule.
  c.schedule = PipelineSchedule::OneFOneB;
  c.virtual_stages = o.count_or("virtual_stages", 1, 1024);  // model chunks per GPU: at most a layer each
  if (c.tensor > 1)
    check_heads_divide(model, c.tensor, o.at("tensor_parallel"));
  parse_common(o, c, model, scenario.training);
  return build_parallel_plan(scenario, topology, model, c, iterations, warmup, collectives);
}

}  // namespace dtsim
