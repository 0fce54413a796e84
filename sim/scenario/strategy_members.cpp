// See strategy_members.hpp.
#include "sim/scenario/strategy_members.hpp"

#include "sim/util/did_you_mean.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace dtsim {

namespace {

/// Per kind, in the order the README documents them. "single" is DDP on one GPU (its builder).
const std::map<std::string, std::vector<std::string>>& member_table()
{
  static const std::map<std::string, std::vector<std::string>> table = [] {
    std::map<std::string, std::vector<std::string>> t;
    t["ddp"] = {"kind", "bucket_cap_mb", "first_bucket_mb", "broadcast_buffers", "gradient_accumulation",
                "half_efficiency_samples"};
    t["single"] = t["ddp"];
    t["dp"] = {"kind", "launch_overhead_us_per_layer", "replicate_us_per_module", "coalesce_mb", "half_efficiency_samples"};
    t["pipeline"] = {"kind", "microbatches", "schedule", "balance", "half_efficiency_samples"};
    t["hybrid"] = {"kind", "tensor_parallel", "pipeline_stages", "microbatches", "schedule", "balance",
                   "bucket_cap_mb", "half_efficiency_samples", "rank_order", "sequence_parallel",
                   "distributed_optimizer", "virtual_stages", "tp_backward_overlap",
                   "scatter_gather_tensors_in_pipeline"};
    t["fsdp"] = {"kind", "sharding", "version", "reshard_after_forward", "backward_prefetch", "forward_prefetch",
                 "limit_all_gathers", "mixed_precision", "no_sync", "shard_group_size", "tensor_parallel",
                 "sequence_parallel", "replicate_embedding", "loss_parallel", "tensor_parallel_gather", "sharded_dtype",
                 "cpu_offload", "gradient_accumulation", "half_efficiency_samples"};
    t["zero"] = {"kind", "stage", "reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size",
                 "stage3_param_persistence_threshold", "stage3_max_reuse_distance", "stage3_max_live_parameters",
                 "overlap_comm", "reduce_scatter", "use_multi_rank_bucket_allreduce", "mics_shard_size",
                 "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients",
                 "offload_optimizer", "offload_param", "gradient_accumulation", "half_efficiency_samples"};
    return t;
  }();
  return table;
}

}  // namespace

const std::vector<std::string>& strategy_members(const std::string& kind)
{
  static const std::vector<std::string> none;
  const auto it = member_table().find(kind);
  return it == member_table().end() ? none : it->second;
}

const std::vector<std::string>& zero_stage3_members()
{
  static const std::vector<std::string> members = {
      "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold", "stage3_max_reuse_distance", "stage3_max_live_parameters",
      "mics_shard_size", "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients", "offload_param"};
  return members;
}

void reject_unknown_strategy_members(const JsonReader& strategy)
{
  const std::string kind = strategy.at("kind").as_string();
  const auto& known = strategy_members(kind);
  for (const auto& [key, member] : strategy.members()) {
    if (std::find(known.begin(), known.end(), key) != known.end())
      continue;
    std::vector<std::string> takers;  // the other kinds that take it ("single" is ddp's alias)
    for (const auto& [other, members] : member_table())
      if (other != "single" && std::find(members.begin(), members.end(), key) != members.end())
        takers.push_back(other);
    const std::string whose =
        takers.empty() ? did_you_mean(key, known)
                       : fmt::format(" (a member of strategy.kind {}, not {};", fmt::join(takers, " and "), kind);
    member.fail(fmt::format("unknown member \"{}\"{}{}expected one of {})", key, whose, takers.empty() ? " (" : " ",
                            fmt::join(known, ", ")));
  }
}

}  // namespace dtsim
