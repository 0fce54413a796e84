#include "sim/predict/fit_alternatives.hpp"

#include "sim/model/model.hpp"
#include "sim/scenario/scenario_model.hpp"
#include "sim/strategies/partition.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

namespace dtsim {

namespace {

/// The scenario with `sets` added to its own overrides, planned; nothing when the scenario then does
/// not read or plan (a change it refuses is no alternative).
std::optional<FitAlternative> planned(const Scenario& s, const std::vector<std::string>& sets)
{
  std::vector<Override> overrides = s.overrides;
  for (const auto& text : sets)
    overrides.push_back(parse_override(text));
  try {
    const PlannedMemory m = planned_memory(load_scenario(s.file, overrides));
    return FitAlternative{sets, m.device_bytes, m.fits, m.host_fits};
  } catch (const InputError&) {
    return std::nullopt;
  }
}

/// The member of the scenario's strategy object, or null.
nlohmann::json member(const Scenario& s, const char* name)
{
  const auto& strategy = s.doc.at("strategy");
  return strategy.is_object() && strategy.contains(name) ? strategy.at(name) : nlohmann::json();
}

bool truthy(const nlohmann::json& v) { return v.is_boolean() ? v.get<bool>() : v.is_object(); }

using SetsFor = std::function<std::vector<std::string>(std::int64_t)>;

/// The values k from `from` to `to` whose --set arguments `sets_for(k)` the scenario accepts (read, not
/// planned: a global batch the micro-batch must divide, Megatron's micro-batches dividing the batch),
/// ascending, at most 4096 of them.
std::vector<std::int64_t> accepted_values(const Scenario& s, std::int64_t from, std::int64_t to, const SetsFor& sets_for)
{
  std::vector<std::int64_t> accepted;
  for (std::int64_t k = from; k <= to && accepted.size() < 4096; ++k) {
    std::vector<Override> overrides = s.overrides;
    for (const auto& text : sets_for(k))
      overrides.push_back(parse_override(text));
    try {
      (void)load_scenario(s.file, overrides);
      accepted.push_back(k);
    } catch (const InputError&) {
    }
  }
  return accepted;
}

/// Bisection over `values` (ascending), along which memory is monotone: `grows` (a batch) makes the
/// values that fit a prefix, whose last is returned; else (micro-batches of one batch) a suffix, whose
/// first is. When none fits, the value nearest to fitting (to show how far it is); nothing when
/// `values` is empty or that value cannot be planned.
std::optional<FitAlternative> bisect(const Scenario& s, const std::vector<std::int64_t>& values, const SetsFor& sets_for,
                                     bool grows)
{
  if (values.empty())
    return std::nullopt;
  // Position i from the end where memory is least: those that fit are positions 0 .. some i.
  const auto at = [&](std::size_t i) { return planned(s, sets_for(values[grows ? i : values.size() - 1 - i])); };
  std::optional<FitAlternative> best = at(0);
  if (!best || !best->fits)
    return best;
  std::size_t lo = 0, hi = values.size();  // position lo fits; from hi on none is known to
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    auto a = at(mid);
    if (a && a->fits) {
      lo = mid;
      best = std::move(a);
    } else {
      hi = mid;
    }
  }
  return best;
}

/// The largest value of `path` below `current` that fits: memory grows with the micro-batch
/// (activations, the input). `extra`: --set arguments that go with each value (the micro-steps member
/// a global batch then decides). `least`: the smallest value to try (a pipeline's batch holds at
/// least one sample per micro-batch).
std::optional<FitAlternative> largest_batch(const Scenario& s, const std::string& path, std::int64_t current,
                                            const std::vector<std::string>& extra = {}, std::int64_t least = 1)
{
  const SetsFor sets_for = [&](std::int64_t k) {
    std::vector<std::string> sets = {fmt::format("{}={}", path, k)};
    sets.insert(sets.end(), extra.begin(), extra.end());
    return sets;
  };
  return bisect(s, accepted_values(s, least, current - 1, sets_for), sets_for, true);
}

/// A pipeline whose replica batch is split by strategy.microbatches: the fewest micro-batches above
/// `current` that fit (smaller micro-batches, the same batch; memory falls as they do).
std::optional<FitAlternative> fewest_microbatches(const Scenario& s, int current)
{
  const SetsFor sets_for = [](std::int64_t k) { return std::vector<std::string>{fmt::format("strategy.microbatches={}", k)}; };
  // At least one sample per micro-batch (the pipeline builders' rule), at most resolve_batch's 1024.
  const std::int64_t most = std::min<std::int64_t>(1024, s.training.batch_per_gpu);
  return bisect(s, accepted_values(s, current + 1, most, sets_for), sets_for, false);
}

}  // namespace

std::vector<FitAlternative> fit_alternatives(const Scenario& s)
{
  std::vector<FitAlternative> out;
  const auto add = [&](const std::vector<std::string>& sets) {
    if (auto a = planned(s, sets))
      out.push_back(std::move(*a));
  };
  const auto kind = s.strategy_spec.kind;
  const Recomputation& recomputation = s.training.recomputation;
  const Model model = scenario_model(s);
  const bool transformer = !transformer_layers(model).empty();

  if (!recomputation.any() && transformer)
    add({"training.activation_checkpointing=selective"});
  // Every layer recomputed; from selective_layer, its every-n-th set back to every layer.
  std::vector<std::string> full{"training.activation_checkpointing=full"};
  if (recomputation.every > 1)
    full.push_back("training.activation_checkpointing_every=1");
  if (!recomputation.every_layer())
    add(full);

  const auto& batch = s.training.batch;
  const bool per_micro_step = kind != StrategyKind::Pipeline && kind != StrategyKind::Hybrid;
  // The member giving the micro-steps: with a global batch, the micro-batch decides them, so it goes.
  const char* steps_key = per_micro_step ? "gradient_accumulation" : "microbatches";
  const bool steps_given = !member(s, steps_key).is_null();
  if (batch.given_as_micro && batch.micro_batch > 1) {
    const bool global = s.doc.at("training").contains("global_batch");
    const std::vector<std::string> extra = global && steps_given ? std::vector<std::string>{fmt::format("strategy.{}=null", steps_key)}
                                                                 : std::vector<std::string>{};
    if (auto a = largest_batch(s, "training.micro_batch", static_cast<std::int64_t>(batch.micro_batch), extra))
      out.push_back(std::move(*a));
  }
  // The older batch_per_gpu: per GPU and micro-step, or a pipeline replica's batch over its micro-batches.
  if (!batch.given_as_micro && s.training.batch_per_gpu > 1)
    if (auto a = largest_batch(s, "training.batch_per_gpu", s.training.batch_per_gpu, {},
                               per_micro_step ? 1 : batch.accumulation))
      out.push_back(std::move(*a));
  if (!batch.given_as_micro && !per_micro_step && batch.micro_batch > 1)
    if (auto a = fewest_microbatches(s, batch.accumulation))
      out.push_back(std::move(*a));

  // Sharding more: each strategy's next step, as a whole strategy object where the kind changes.
  std::vector<std::vector<std::string>> sharding;
  if (replicates_the_model(kind)) {
    if (s.gpus > 1) {  // on one GPU there is nothing to shard over, only the host to offload to
      sharding.push_back({R"(strategy={"kind":"fsdp"})"});
      sharding.push_back({R"(strategy={"kind":"zero","stage":2})"});
      sharding.push_back({R"(strategy={"kind":"zero","stage":3})"});
    }
    sharding.push_back({R"(strategy={"kind":"zero","stage":2,"offload_optimizer":{"device":"cpu"}})"});
  } else if (kind == StrategyKind::Fsdp) {
    const auto shard = member(s, "sharding");
    if (shard.is_string() && shard != "full_shard")
      sharding.push_back({"strategy.sharding=full_shard", "strategy.shard_group_size=null"});
    const auto reshard = member(s, "reshard_after_forward");
    if (!reshard.is_null() && reshard != true)
      sharding.push_back({"strategy.reshard_after_forward=true"});
    if (!truthy(member(s, "cpu_offload")))
      sharding.push_back({"strategy.cpu_offload=true"});
  } else if (kind == StrategyKind::Zero) {
    const auto stage = member(s, "stage");
    if (stage.is_number() && stage.get<double>() < 3 && s.gpus > 1)  // one GPU: nothing to partition over
      sharding.push_back({"strategy.stage=3"});
    if (!truthy(member(s, "offload_optimizer")))
      sharding.push_back({R"(strategy.offload_optimizer={"device":"cpu"})"});
    if (stage == 3 && !truthy(member(s, "offload_param")))
      sharding.push_back({R"(strategy.offload_param={"device":"cpu"})"});
  } else if (kind == StrategyKind::Hybrid) {
    if (!truthy(member(s, "distributed_optimizer")))
      sharding.push_back({"strategy.distributed_optimizer=true"});
    if (s.strategy_spec.tensor > 1 && !truthy(member(s, "sequence_parallel")))
      sharding.push_back({"strategy.sequence_parallel=true"});
  }
  // More tensor parallelism, up to a node's GPUs: weights and (with sequence parallelism) activations / t.
  if (transformer && (kind == StrategyKind::Fsdp || kind == StrategyKind::Hybrid)) {
    const int per_node = build_topology(s.cluster()).gpus_per_node;
    for (int t = 2 * s.strategy_spec.tensor; t <= per_node; t *= 2)
      sharding.push_back({fmt::format("strategy.tensor_parallel={}", t), "strategy.sequence_parallel=true"});
  }
  for (const auto& sets : sharding)
    add(sets);

  const bool any_fits = std::any_of(out.begin(), out.end(), [](const FitAlternative& a) { return a.fits; });
  if (!any_fits && !recomputation.every_layer())
    for (auto sets : sharding) {
      sets.insert(sets.end(), full.begin(), full.end());
      add(sets);
    }
  return out;
}

}  // namespace dtsim
