// See sharding_options.hpp.
#include "sim/strategies/sharding_options.hpp"

#include "sim/scenario/strategy_members.hpp"
#include "sim/strategies/compute_time.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

namespace dtsim {

const char* to_string(Sharding s)
{
  switch (s) {
    case Sharding::FullShard:
      return "full_shard";
    case Sharding::ShardGradOp:
      return "shard_grad_op";
    case Sharding::HybridShard:
      return "hybrid_shard";
    case Sharding::NoShard:
      return "no_shard";
  }
  return "?";
}

const char* to_string(BackwardPrefetch p)
{
  switch (p) {
    case BackwardPrefetch::Pre:
      return "backward_pre";
    case BackwardPrefetch::Post:
      return "backward_post";
    case BackwardPrefetch::None:
      return "none";
  }
  return "?";
}

double dtype_bytes(const std::string& dtype)
{
  return dtype == "fp32" ? 4.0 : dtype == "fp8" ? 1.0 : 2.0;
}

std::string unsharded_dtype(const FsdpOptions& opt)
{
  return opt.param_dtype == "fp8" ? "bf16" : opt.param_dtype;
}

bool keeps_unsharded_buffers(const FsdpOptions& opt)
{
  return opt.sharding != Sharding::NoShard && (opt.shard_group > 1 || opt.version == 2);
}

bool keeps_gathered_across_micro_steps(const FsdpOptions& opt, int micro_steps)
{
  return opt.version == 1 && keeps_unsharded_buffers(opt) && !opt.reshard_after_forward && opt.no_sync && micro_steps > 1;
}

double gathered_bytes(const ShardUnit& unit, const FsdpOptions& opt)
{
  const double rest = dtype_bytes(unsharded_dtype(opt));
  if (opt.param_dtype != "fp8")
    return unit.params * rest;
  return unit.linear_params * dtype_bytes("fp8") + (unit.params - unit.linear_params) * rest;
}

namespace {

/// DeepSpeed's bucket and threshold sizes are element counts; 1e12 is far above any model's
/// parameters (the largest trained dense models have ~1e12), so larger values mean "one bucket".
constexpr double kMaxElements = 1e12;

std::string half_type_of(Precision p)
{
  return p == Precision::Bf16 ? "bf16" : p == Precision::Fp16 ? "fp16" : "fp32";
}

}  // namespace

FsdpOptions parse_fsdp_options(const Scenario& scenario, int data, int tensor, int gpus_per_node)
{
  const JsonReader o = scenario.strategy_options();
  reject_unknown_strategy_members(o);
  FsdpOptions f;
  if (const auto s = o.find("sharding")) {
    const std::string v = s->as_choice({"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"});
    f.sharding = v == "shard_grad_op" ? Sharding::ShardGradOp
                 : v == "hybrid_shard" ? Sharding::HybridShard
                 : v == "no_shard"     ? Sharding::NoShard
                                       : Sharding::FullShard;
  }
  if (const auto v = o.find("version"))
    f.version = static_cast<int>(v->as_int_in(1, 2));
  // FSDP1-only arguments: FSDP2 (fully_shard) has no such parameter; its behaviour is fixed
  // (explicit backward prefetch of one unit, implicit forward prefetch, two AllGathers in flight).
  const std::pair<const char*, const char*> fsdp1_only[] = {
      {"backward_prefetch", "it prefetches one unit ahead in backward"},
      {"forward_prefetch", "it gathers each unit at its pre-forward, the next one's AllGather overlapping this one's forward"},
      {"limit_all_gathers", "it keeps at most two AllGathers' outputs in flight"}};
  for (const auto& [key, instead] : fsdp1_only)
    if (f.version == 2 && o.has(key))
      o.at(key).fail(fmt::format("expected no {} with FSDP version 2 (fully_shard has no such argument: {}); set "
                                 "strategy.version 1 to use it", key, instead));
  f.reshard_after_forward = f.sharding == Sharding::FullShard || f.sharding == Sharding::HybridShard;
  if (const auto r = o.find("reshard_after_forward")) {
    if (f.sharding == Sharding::NoShard)
      r->fail("expected no reshard_after_forward with sharding no_shard (nothing is sharded)");
    if (r->json().is_number_integer() && f.version == 2) {
      f.reshard_ranks = static_cast<int>(r->as_int_in(1, data));
      if (data % f.reshard_ranks != 0)
        r->fail(fmt::format("expected a number of ranks dividing the {} data-parallel ranks, got {}", data, f.reshard_ranks));
      f.reshard_after_forward = true;
    } else {
      if (!r->json().is_boolean())
        r->fail(fmt::format("{}, got {}",
                            f.version == 2 ? "expected true, false or a number of ranks (version 2)"
                                           : "expected true or false (a number of ranks is FSDP version 2's)",
                            r->json().dump()));
      f.reshard_after_forward = r->as_bool();
    }
    // SHARD_GRAD_OP is FULL_SHARD without the re-shard after forward (FSDP1's _runtime_utils.py:
    // RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES holds FULL_SHARD and HYBRID_SHARD only; FSDP2 spells it
    // reshard_after_forward=False): asking for both contradicts it.
    if (f.sharding == Sharding::ShardGradOp && f.reshard_after_forward)
      r->fail("expected reshard_after_forward false (or none) with sharding shard_grad_op, which keeps the gathered "
              "parameters from forward to backward; sharding full_shard re-shards them");
  }
  if (const auto p = o.find("backward_prefetch")) {
    const std::string v = p->as_choice({"backward_pre", "backward_post", "none"});
    f.backward_prefetch = v == "backward_post" ? BackwardPrefetch::Post : v == "none" ? BackwardPrefetch::None : BackwardPrefetch::Pre;
  }
  f.forward_prefetch = o.bool_or("forward_prefetch", f.forward_prefetch);
  f.limit_all_gathers = o.bool_or("limit_all_gathers", f.limit_all_gathers);
  f.param_dtype = half_type_of(scenario.training.precision);
  if (const auto mp = o.find("mixed_precision")) {
    mp->reject_unknown({"param_dtype", "reduce_dtype"});
    if (const auto p = mp->find("param_dtype")) {
      f.param_dtype = p->as_choice({"fp32", "bf16", "fp16", "fp8"});
      if (f.param_dtype == "fp8" && f.version != 2)
        p->fail("expected \"fp8\" parameter gathers only with version 2 (torchao's float8 all-gather extends fully_shard)");
    }
    f.reduce_dtype = unsharded_dtype(f);
    if (const auto r = mp->find("reduce_dtype"))
      f.reduce_dtype = r->as_choice({"fp32", "bf16", "fp16"});
  } else {
    f.reduce_dtype = f.param_dtype;
  }
  f.no_sync = o.bool_or("no_sync", f.no_sync);
  const int node_ranks = std::max(1, gpus_per_node / tensor);
  f.shard_group = f.sharding == Sharding::HybridShard ? std::min(node_ranks, data) : data;
  if (const auto g = o.find("shard_group_size")) {
    if (f.sharding != Sharding::HybridShard)
      g->fail("expected shard_group_size only with sharding hybrid_shard (the others shard over every data-parallel rank)");
    f.shard_group = static_cast<int>(g->as_int_in(1, data));
  }
  if (data % f.shard_group != 0)
    (o.has("shard_group_size") ? o.at("shard_group_size") : o.at("sharding"))
        .fail(fmt::format("expected a hybrid shard group dividing the {} data-parallel ranks ({} GPUs / tensor_parallel {}), "
                          "got {} (one node's ranks unless shard_group_size says otherwise)",
                          data, data * tensor, tensor, f.shard_group));
  if (f.reshard_ranks > 0) {
    if (f.shard_group % f.reshard_ranks != 0)
      o.at("reshard_after_forward")
          .fail(fmt::format("expected a number of ranks dividing the shard group of {}, got {}", f.shard_group, f.reshard_ranks));
    // As FSDP2 reads the int (_fsdp_init.py _get_post_forward_mesh_info): 1 is False (it warns that
    // it keeps the whole parameters), the shard group's size is True.
    if (f.reshard_ranks == 1)
      f.reshard_after_forward = false;
    if (f.reshard_ranks == 1 || f.reshard_ranks == f.shard_group)
      f.reshard_ranks = 0;
  }
  f.sequence_parallel = o.bool_or("sequence_parallel", false);
  if (f.sequence_parallel && tensor == 1)
    o.at("sequence_parallel").fail("expected sequence_parallel only with tensor_parallel > 1");
  f.replicate_embedding = o.bool_or("replicate_embedding", false);
  if (f.replicate_embedding && tensor == 1)
    o.at("replicate_embedding").fail("expected replicate_embedding only with tensor_parallel > 1");
  f.loss_parallel = o.bool_or("loss_parallel", true);
  if (o.has("loss_parallel") && tensor == 1)
    o.at("loss_parallel").fail("expected loss_parallel only with tensor_parallel > 1 (one rank holds the whole vocabulary)");
  if (const auto g = o.find("tensor_parallel_gather")) {
    f.gather_per_linear = g->as_choice({"module", "linear"}) == "linear";
    if (tensor == 1)
      g->fail("expected tensor_parallel_gather only with tensor_parallel > 1");
  }
  if (const auto d = o.find("sharded_dtype")) {
    const std::string half = half_type_of(scenario.training.precision);
    f.sharded_dtype = d->as_choice({"fp32", "bf16", "fp16"});
    if (f.sharded_dtype != "fp32" && f.sharded_dtype != half)
      d->fail(fmt::format("expected sharded_dtype fp32{} with training.precision {} (a module cast to half precision "
                          "before wrapping trains in that precision)",
                          half == "fp32" ? "" : " or " + half, to_string(scenario.training.precision)));
  }
  if (const auto c = o.find("cpu_offload")) {
    if (c->json().is_boolean()) {
      f.cpu_offload = c->as_bool();
    } else {
      if (!c->is_object())
        c->fail("expected true, false or an object such as {\"pin_memory\": true, \"omp_num_threads\": 1}");
      c->reject_unknown({"pin_memory", "omp_num_threads"});
      f.cpu_offload = true;
      if (const auto pin = c->find("pin_memory")) {
        if (f.version == 1)
          pin->fail("expected no pin_memory with FSDP version 1 (CPUOffload has no such argument: it always pins the "
                    "host shards); set strategy.version 2 for CPUOffloadPolicy");
        f.cpu_offload_pinned = pin->as_bool();
      }
      if (const auto t = c->find("omp_num_threads"))
        f.cpu_offload_threads = static_cast<int>(t->as_int_in(1, 1 << 16));
    }
    // Unsharded parameters stay whole on every rank: FSDP1's NO_SHARD copies the whole flat parameter in
    // and out around each use, which dtsim does not model.
    if (f.cpu_offload && (f.sharding == Sharding::NoShard || f.shard_group < 2))
      c->fail(f.sharding == Sharding::NoShard
                  ? std::string("expected cpu_offload only with parameters sharded over more than one rank, not with sharding "
                                "no_shard: offloading unsharded parameters is not modelled")
                  : fmt::format("expected cpu_offload only with parameters sharded over more than one rank, got a shard group of "
                                "one ({} data-parallel rank{}{}): offloading unsharded parameters is not modelled",
                                data, data == 1 ? "" : "s", f.sharding == Sharding::HybridShard ? " in groups of shard_group_size" : ""));
    // FullyShardedDataParallel's docstring: "FSDP currently does not support gradient accumulation outside
    // no_sync() when using CPU offloading. Trying to do so yields incorrect results" (each micro-step's
    // reduced shard overwrites _cpu_grad).
    const int micro_steps = scenario.training.batch.accumulation;
    if (f.cpu_offload && f.version == 1 && micro_steps > 1 && !f.no_sync)
      c->fail(fmt::format("expected no_sync true with cpu_offload in FSDP version 1 over {} micro-steps: FSDP1 does not "
                          "support gradient accumulation outside no_sync() with CPU offloading (its results are wrong)",
                          micro_steps));
  }
  f.half_efficiency_samples = half_efficiency_samples_of(o);
  return f;
}

namespace {

/// An offload object's device (deepspeed/runtime/zero/offload_config.py): "cpu" or "none" (its
/// default); ZeRO-Infinity's "nvme" is not modelled. `known`: its members; the NVMe-only ones are
/// taken and have no effect on the host.
bool offload_to_cpu(const JsonReader& v, const char* what, const std::vector<std::string>& known)
{
  if (!v.is_object())
    v.fail(fmt::format("expected an object such as {{\"device\": \"cpu\", \"pin_memory\": true}} (DeepSpeed's {})", what));
  v.reject_unknown(known);
  const std::string device = v.find("device") ? v.at("device").as_choice({"cpu", "none", "nvme"}) : "none";
  if (device == "nvme")
    v.at("device").fail("expected \"cpu\" or \"none\": dtsim does not model ZeRO-Infinity's NVMe offload");
  // The NVMe members have no effect on the host, but are typed as offload_config.py's pydantic
  // models type them: a wrong one is an error there too.
  if (const auto path = v.find("nvme_path"); path && !path->json().is_null())
    (void)path->as_string();
  for (const char* count : {"buffer_count", "buffer_size", "max_in_cpu"})
    if (const auto c = v.find(count))
      (void)c->as_int_in(0, std::numeric_limits<std::int64_t>::max());
  for (const char* flag : {"fast_init", "pipeline_read", "pipeline_write"})
    if (const auto f = v.find(flag))
      (void)f->as_bool();
  return device == "cpu";
}

/// offload_optimizer (DeepSpeedZeroOffloadOptimizerConfig); a partial ratio is not modelled.
/// omp_num_threads is dtsim's: the OMP_NUM_THREADS the processes run with (torchrun sets 1;
/// DeepSpeed's launcher leaves it unset, and OpenMP then runs the CPU Adam on every hardware thread).
void parse_offload_optimizer(const JsonReader& v, const JsonReader& strategy, ZeroOptions& z)
{
  z.offload_optimizer = offload_to_cpu(v, "offload_optimizer", {"device", "pin_memory", "omp_num_threads", "ratio", "buffer_count",
                                                                "fast_init", "pipeline_read", "pipeline_write", "nvme_path"});
  z.offload_optimizer_pinned = v.bool_or("pin_memory", z.offload_optimizer_pinned);
  if (const auto t = v.find("omp_num_threads")) {
    z.offload_threads = static_cast<int>(t->as_int_in(1, 1 << 16));
    // dtsim's own member: the threads of a CPU step there is none of without the offload.
    if (!z.offload_optimizer)
      t->fail("expected omp_num_threads only with device \"cpu\" (the threads of the CPU step; nothing is offloaded)");
  }
  if (const auto r = v.find("ratio"); r && r->as_number() != 1.0)
    r->fail(fmt::format("expected 1 (the whole optimizer offloaded): dtsim does not model ZeRO-3's partial offload, got {}",
                        r->as_number()));
  if (z.offload_optimizer && z.mics_shard_size > 0)
    strategy.at("mics_shard_size").fail("expected -1 (off) with offload_optimizer: dtsim models one of MiCS and ZeRO-Offload at a time");
  if (z.offload_optimizer && z.quantized_gradients)
    strategy.at("zero_quantized_gradients").fail("expected false with offload_optimizer: dtsim models one of qgZ and ZeRO-Offload at a time");
}

}  // namespace

ZeroOptions parse_zero_options(const Scenario& scenario)
{
  const JsonReader o = scenario.strategy_options();
  reject_unknown_strategy_members(o);
  ZeroOptions z;
  z.stage = static_cast<int>(o.at("stage").as_int_in(1, 3));
  // Element counts are integers in config.py (5e8 is one; 1.5 is not).
  const auto whole = [](const JsonReader& v, double x) {
    if (x != std::floor(x))
      v.fail(fmt::format("expected a whole number of elements, got {}", describe_json(v.json())));
    return x;
  };
  const auto elements = [&](const char* key, double fallback) {
    const auto v = o.find(key);
    return v ? whole(*v, v->as_positive_at_most(kMaxElements)) : fallback;
  };
  z.reduce_bucket_elems = elements("reduce_bucket_size", z.reduce_bucket_elems);
  z.allgather_bucket_elems = elements("allgather_bucket_size", z.allgather_bucket_elems);
  // Stage 3's sizes may be 0 (config.py: ge=0): no prefetch, nothing persists, nothing kept.
  const auto count = [&](const char* key, double fallback) {
    const auto v = o.find(key);
    return v ? whole(*v, std::min(v->as_non_negative(), kMaxElements)) : fallback;
  };
  z.prefetch_bucket_elems = count("stage3_prefetch_bucket_size", z.prefetch_bucket_elems);
  z.persistence_threshold = count("stage3_param_persistence_threshold", z.persistence_threshold);
  z.max_reuse_distance = count("stage3_max_reuse_distance", z.max_reuse_distance);
  z.max_live_parameters = count("stage3_max_live_parameters", z.max_live_parameters);
  if (const auto v = o.find("mics_shard_size")) {
    const auto size = v->as_int();
    if (size != -1 && size < 2)
      v->fail(fmt::format("expected -1 (off) or a shard group of at least 2 GPUs, got {}", size));
    z.mics_shard_size = size == -1 ? 0 : static_cast<int>(std::min<std::int64_t>(size, 1 << 30));
  }
  if (const auto v = o.find("zero_hpz_partition_size"))
    z.hpz_partition_size = static_cast<int>(v->as_int_in(0, 1 << 30));  // config.py: ge=0; 0 and 1 are off
  if (z.mics_shard_size > 0 && z.hpz_partition_size > 1)
    o.at("zero_hpz_partition_size").fail("expected zero_hpz_partition_size 1 (off) with mics_shard_size: dtsim models one of MiCS and hpZ at a time");
  z.quantized_weights = o.bool_or("zero_quantized_weights", false);
  z.quantized_gradients = o.bool_or("zero_quantized_gradients", false);
  if (z.mics_shard_size > 0 && z.quantized_gradients)
    o.at("zero_quantized_gradients").fail("expected zero_quantized_gradients false with mics_shard_size: dtsim models qgZ over every data-parallel rank");
  for (const auto& key : zero_stage3_members())
    if (z.stage != 3 && o.has(key))
      o.at(key).fail(fmt::format("expected {} only with stage 3, got stage {}", key, z.stage));
  if (const auto v = o.find("offload_optimizer"))
    parse_offload_optimizer(*v, o, z);
  if (const auto v = o.find("offload_param")) {  // DeepSpeedZeroOffloadParamConfig
    z.offload_param = offload_to_cpu(*v, "offload_param", {"device", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu", "nvme_path"});
    z.offload_param_pinned = v->bool_or("pin_memory", z.offload_param_pinned);
  }
  z.overlap_comm = o.bool_or("overlap_comm", z.stage == 3);
  z.reduce_scatter = o.bool_or("reduce_scatter", z.reduce_scatter);
  z.multi_rank_bucket_allreduce = o.bool_or("use_multi_rank_bucket_allreduce", z.multi_rank_bucket_allreduce);
  z.half_efficiency_samples = half_efficiency_samples_of(o);
  return z;
}

}  // namespace dtsim
