// See training_settings.hpp.
#include "sim/scenario/training_settings.hpp"
#include "sim/util/input_error.hpp"

#include <fmt/format.h>

#include <optional>

namespace dtsim {

const char* to_string(StrategyKind kind)
{
  switch (kind) {
    case StrategyKind::Single:
      return "single";
    case StrategyKind::Ddp:
      return "ddp";
    case StrategyKind::Dp:
      return "dp";
    case StrategyKind::Pipeline:
      return "pipeline";
    case StrategyKind::Hybrid:
      return "hybrid";
    case StrategyKind::Fsdp:
      return "fsdp";
    case StrategyKind::Zero:
      return "zero";
  }
  return "?";
}

namespace {

/// Per-GPU batch bound: 16,777,216 samples, far beyond any training batch, keeps products in range.
constexpr int kMaxBatch = 1 << 24;
/// Micro-steps per optimizer step (see resolve_batch).
constexpr int kMaxMicroSteps = 1024;

StrategyKind strategy_kind_of(const std::string& kind)
{
  for (const auto k : {StrategyKind::Single, StrategyKind::Ddp, StrategyKind::Dp, StrategyKind::Pipeline, StrategyKind::Hybrid,
                        StrategyKind::Fsdp, StrategyKind::Zero})
    if (kind == to_string(k))
      return k;
  return StrategyKind::Ddp;  // as_choice admits only the names above
}

}  // namespace

Precision parse_precision(const JsonReader& r)
{
  const std::string p = r.as_choice({"fp32", "tf32", "amp", "fp16", "bf16"});
  if (p == "tf32")
    return Precision::Tf32;
  if (p == "amp")
    return Precision::Amp;
  if (p == "fp16")
    return Precision::Fp16;
  if (p == "bf16")
    return Precision::Bf16;
  return Precision::Fp32;
}

namespace {

ComputeSpec parse_compute(const JsonReader& r)
{
  r.reject_unknown({"step_time_s", "single_gpu_throughput", "gpu", "efficiency", "model", "memory_efficiency", "profile",
                    "jitter_cv"});
  const int given = static_cast<int>(r.has("step_time_s")) + static_cast<int>(r.has("single_gpu_throughput")) +
                    static_cast<int>(r.has("gpu") || r.has("efficiency")) + static_cast<int>(r.has("profile"));
  if (given != 1)
    r.fail("expected exactly one of {\"step_time_s\": s}, {\"single_gpu_throughput\": samples/s}, "
           "{\"gpu\": name, \"efficiency\": fraction} or {\"profile\": calibration or profile .json}");
  if (!r.has("gpu") && !r.has("efficiency") && (r.has("model") || r.has("memory_efficiency")))
    r.at(r.has("model") ? "model" : "memory_efficiency")
        .fail("expected {\"gpu\", \"efficiency\"} beside it (the compute model times FLOP-based compute only)");
  ComputeSpec c;
  if (r.has("profile")) {
    c.source = ComputeSpec::Source::Profile;
    c.profile = read_compute_profile_source(r.at("profile"));
  } else if (r.has("step_time_s")) {
    c.source = ComputeSpec::Source::StepTime;
    // From 1 us (a kernel launch alone takes about 5 us: no step is shorter; at 1e-300 a run printed a
    // 300-digit throughput) to 11 days, far beyond any training step.
    c.step_time_s = r.at("step_time_s").as_number_in(1e-6, 1e6);
  } else if (r.has("single_gpu_throughput")) {
    c.source = ComputeSpec::Source::Throughput;
    // From one sample in 11 days (the inverse of step_time_s's bounds: at 1e-300 the times overflowed to
    // inf and NaN) to 1e9 samples/s, as reference.single_gpu_throughput.
    c.single_gpu_throughput = r.at("single_gpu_throughput").as_number_in(1e-6, 1e9);
  } else {
    c.source = ComputeSpec::Source::Flops;
    c.gpu = r.string_or("gpu", "");
    const auto eff = r.at("efficiency");
    c.efficiency = eff.as_positive();
    if (c.efficiency < 1e-3)  // 0.1% of peak: below any training workload (a run took 1e300 s at 1e-300)
      eff.fail(fmt::format("expected a fraction of the GPU's peak from 0.001 to 1, got {:g}", c.efficiency));
    if (c.efficiency > 1)
      eff.fail(fmt::format("expected a fraction of peak in (0, 1], got {}", c.efficiency));
    if (const auto model = r.find("model"))
      c.model = model->as_choice({"flops", "roofline"}) == "roofline" ? ComputeSpec::Model::Roofline
                                                                       : ComputeSpec::Model::Flops;
    if (const auto mem = r.find("memory_efficiency")) {
      if (c.model != ComputeSpec::Model::Roofline)
        mem->fail("expected training.compute.model \"roofline\" beside memory_efficiency (only the roofline model "
                  "times memory-bound kernels)");
      c.memory_efficiency = mem->as_positive();
      if (c.memory_efficiency < 1e-3 || c.memory_efficiency > 1)
        mem->fail(fmt::format("expected a fraction of the GPU's HBM bandwidth from 0.001 to 1, got {:g}",
                              c.memory_efficiency));
    }
  }
  return c;
}

}  // namespace

std::vector<std::string> optimizer_names()
{
  std::vector<std::string> names;
  for (const char* base : {"sgd", "sgd-plain", "adam", "adamw"})
    for (const char* variant : {"", "-foreach", "-fused", "-for-loop"})
      names.push_back(std::string(base) + variant);
  return names;
}

TrainingSpec parse_training(const JsonReader& r)
{
  r.reject_unknown({"dataset_samples", "batch_per_gpu", "micro_batch", "global_batch", "epochs", "precision", "compute",
                    "loader", "optimizer", "activation_checkpointing", "activation_checkpointing_every", "attention",
                    "loss_dtype", "loss_kernel", "host_sync", "attention_kernel", "hold_logits", "compile",
                    "norm_kernel"});
  TrainingSpec t;
  t.dataset_samples = r.at("dataset_samples").as_positive_int();
  if (r.has("batch_per_gpu") && r.has("micro_batch"))
    r.at("micro_batch").fail("expected either training.micro_batch or training.batch_per_gpu, not both "
                             "(batch_per_gpu is the older spelling: per GPU for ddp, a replica's batch for pipeline and hybrid)");
  if (r.has("micro_batch")) {
    t.batch.given_as_micro = true;
    t.batch.micro_batch = r.at("micro_batch").as_count(kMaxBatch);
  } else if (r.has("global_batch")) {
    r.at("global_batch").fail("expected training.micro_batch beside global_batch (the samples one data-parallel rank "
                              "runs per micro-step); batch_per_gpu does not combine with global_batch");
  } else {
    t.batch_per_gpu = r.at("batch_per_gpu").as_count(kMaxBatch);
  }
  t.epochs = r.at("epochs").as_positive();
  if (t.epochs * static_cast<double>(t.dataset_samples) < 1)
    r.at("epochs").fail(fmt::format("expected epochs x dataset_samples to be at least one sample, got {:g} x {}",
                                    t.epochs, t.dataset_samples));
  t.precision = r.has("precision") ? parse_precision(r.at("precision")) : Precision::Fp32;
  std::string policy = "none";
  if (const auto ac = r.find("activation_checkpointing")) {
    // true / false as Composer's and llm-foundry's fsdp_config (`activation_checkpointing: true`
    // checkpoints every block) and Hugging Face's gradient_checkpointing write it: full / none.
    const std::vector<std::string> policies{"none", "selective", "full", "selective_op", "selective_layer"};
    if (!ac->json().is_boolean() && !ac->json().is_string())
      ac->fail(fmt::format("expected one of {} (or true: full, false: none), got {}", fmt::join(policies, ", "),
                           describe_json(ac->json())));
    const std::string v = ac->json().is_boolean() ? (ac->as_bool() ? "full" : "none") : ac->as_choice(policies);
    policy = v;
    t.recomputation.policy = v == "full" || v == "selective_layer" ? ActivationCheckpointing::Full
                             : v == "selective"                    ? ActivationCheckpointing::Selective
                             : v == "selective_op"                 ? ActivationCheckpointing::SelectiveOp
                                                                   : ActivationCheckpointing::None;
    if (v == "selective_layer")
      t.recomputation.every = 2;  // torchtitan's default selective_ac_option, "2"
  }
  if (const auto every = r.find("activation_checkpointing_every")) {
    // At most a million: more than any model's layers. 1 is every layer, as "full" (which may say so).
    const int n = every->as_count(1000000);
    if (policy != "selective_layer" && !(policy == "full" && n == 1))
      every->fail(fmt::format("expected activation_checkpointing_every only with training.activation_checkpointing "
                              "\"selective_layer\" (every n-th transformer layer recomputed; 1 with \"full\"), got {} "
                              "with \"{}\"",
                              n, policy));
    t.recomputation.every = n;
  }
  if (const auto optimizer = r.find("optimizer"))
    t.optimizer = optimizer->as_choice(optimizer_names());
  if (const auto attention = r.find("attention"))
    t.attention = attention->as_choice({"sdpa", "eager"}) == "eager" ? AttentionKernel::Eager : AttentionKernel::Sdpa;
  if (const auto kernel = r.find("attention_kernel")) {
    const std::string v = kernel->as_choice({"auto", "flash2", "flash3", "cudnn"});
    if (t.attention != AttentionKernel::Sdpa)
      kernel->fail("expected no attention_kernel with training.attention eager (it names the fused kernel of sdpa)");
    t.attention_kernel = v == "flash2"   ? FusedAttentionKernel::Flash2
                         : v == "flash3" ? FusedAttentionKernel::Flash3
                         : v == "cudnn"  ? FusedAttentionKernel::Cudnn
                                         : FusedAttentionKernel::Auto;
  }
  // The cross entropy's dtype: fp32 (logits.float(), the default), or the half type of a model that
  // runs in it and feeds its output to F.cross_entropy as it is.
  if (const auto loss = r.find("loss_dtype")) {
    const std::string d = loss->as_choice({"fp32", "bf16", "fp16"});
    const std::string half = t.precision == Precision::Bf16 ? "bf16" : t.precision == Precision::Fp16 ? "fp16" : "";
    if (d != "fp32" && d != half)
      loss->fail(fmt::format("expected fp32{} with training.precision {} (the loss runs in half precision only on the "
                             "output of a model trained in it)",
                             half.empty() ? "" : " or " + half, to_string(t.precision)));
    t.loss_bytes = d == "fp32" ? 4 : 2;
  }
  if (const auto kernel = r.find("loss_kernel"))
    t.loss_kernel = kernel->as_choice({"eager", "fused"}) == "fused" ? LossKernel::Fused : LossKernel::Eager;
  if (const auto sync = r.find("host_sync"))
    t.host_sync_each_micro_step = sync->as_choice({"step", "micro_step"}) == "micro_step";
  if (const auto hold = r.find("hold_logits"))
    t.hold_logits = hold->as_bool();
  if (const auto compile = r.find("compile"))
    t.compile = compile->as_bool();
  if (const auto kernel = r.find("norm_kernel"))
    t.fused_rmsnorm = kernel->as_choice({"eager", "fused"}) == "fused";
  t.compute = parse_compute(r.at("compute"));
  return t;
}

// The parallel degrees. Each is at most the GPUs of the scenario; their product is taken in 64 bits
// (two counts of up to 1,000,000 GPUs overflow an int).
StrategySpec parse_strategy_degrees(const JsonReader& root, const std::string& kind, int gpus)
{
  StrategySpec st;
  st.kind = strategy_kind_of(kind);
  const JsonReader o = root.at("strategy");
  switch (st.kind) {
    case StrategyKind::Single:
      break;  // build_plan insists on one GPU
    case StrategyKind::Ddp:
    case StrategyKind::Dp:
    case StrategyKind::Zero:
      st.data = gpus;
      break;
    case StrategyKind::Fsdp:  // torchtitan's 2-D mesh: tensor-parallel ranks innermost, sharded data parallel across them
      st.tensor = o.count_or("tensor_parallel", 1, gpus);
      if (gpus % st.tensor != 0)
        root.at("gpus").fail(fmt::format("expected a multiple of strategy.tensor_parallel = {} GPUs, got {}", st.tensor, gpus));
      st.data = gpus / st.tensor;
      break;
    case StrategyKind::Pipeline:
      st.stages = gpus;
      break;
    case StrategyKind::Hybrid: {
      st.tensor = o.count_or("tensor_parallel", 1, gpus);
      st.stages = o.count_or("pipeline_stages", 1, gpus);
      const std::int64_t per_replica = static_cast<std::int64_t>(st.tensor) * st.stages;  // each up to 1e6 GPUs
      if (gpus % per_replica != 0)
        root.at("gpus").fail(fmt::format("expected a multiple of tensor_parallel x pipeline_stages = {} x {} = {} GPUs, got {}",
                                         st.tensor, st.stages, per_replica, gpus));
      st.data = static_cast<int>(gpus / per_replica);
      break;
    }
  }
  return st;
}

// Resolves micro_batch, accumulation and global_batch (BatchSpec) for the strategy, and the
// batch_per_gpu that the strategies read. Each micro-step is a copy of the iteration's compute in
// the plan; 1024 is beyond any published setting (a few to a few hundred micro-batches per step)
// and keeps the plan within memory.
void resolve_batch(const JsonReader& root, const StrategySpec& st, TrainingSpec& t)
{
  const JsonReader training = root.at("training");
  const JsonReader o = root.at("strategy");
  const bool pipelined = st.kind == StrategyKind::Pipeline || st.kind == StrategyKind::Hybrid;
  const char* steps_key = pipelined ? "microbatches" : st.kind == StrategyKind::Dp ? "" : "gradient_accumulation";
  const std::optional<JsonReader> steps = *steps_key ? o.find(steps_key) : std::nullopt;
  const int given_steps = steps ? steps->as_count(kMaxMicroSteps) : 1;
  BatchSpec& b = t.batch;
  if (!b.given_as_micro) {
    b.accumulation = given_steps;
    // Megatron's micro-batches are equal (num_microbatches_calculator.py asserts that the global batch
    // divides by micro-batch x data-parallel size). PyTorch's Pipe (strategy pipeline) splits the batch
    // with tensor.chunk(chunks) (torch/distributed/pipeline/sync/microbatch.py scatter): chunks of
    // ceil(B / m) samples, the last smaller, so fewer than m of them where that size covers B sooner
    // (8 samples in 7 chunks: 4 of 2). Their number is that; their size the mean, B over it.
    if (st.kind == StrategyKind::Pipeline && t.batch_per_gpu >= 1) {
      const std::int64_t chunk = (t.batch_per_gpu + b.accumulation - 1) / b.accumulation;
      b.accumulation = static_cast<int>((t.batch_per_gpu + chunk - 1) / chunk);
    }
    if (st.kind == StrategyKind::Hybrid && t.batch_per_gpu % b.accumulation != 0)
      (steps ? *steps : training.at("batch_per_gpu"))
          .fail(fmt::format("expected micro-batches that divide training.batch_per_gpu (Megatron's are all of one size): "
                            "{} samples per replica in {} micro-batches",
                            t.batch_per_gpu, b.accumulation));
    b.micro_batch = pipelined ? static_cast<double>(t.batch_per_gpu) / b.accumulation : static_cast<double>(t.batch_per_gpu);
    b.global_batch = t.batch_per_gpu * st.data * (pipelined ? 1 : b.accumulation);
    b.measured_at = t.batch_per_gpu;
    return;
  }
  const auto micro = static_cast<std::int64_t>(b.micro_batch);
  if (const auto g = training.find("global_batch")) {
    const std::int64_t global = g->as_positive_int();
    const std::int64_t per_step = micro * st.data;
    if (global % per_step != 0)
      g->fail(fmt::format("expected a multiple of training.micro_batch x data-parallel replicas = {} x {} = {}, got {}",
                          micro, st.data, per_step, global));
    if (global / per_step > kMaxMicroSteps)
      g->fail(fmt::format("expected at most {} micro-steps per optimizer step (global_batch / (micro_batch x {} "
                          "data-parallel replicas)), got {} / {} = {}",
                          kMaxMicroSteps, st.data, global, per_step, global / per_step));
    b.accumulation = static_cast<int>(global / per_step);
    if (steps && given_steps != b.accumulation)
      steps->fail(fmt::format("expected {} = training.global_batch / (micro_batch x data-parallel replicas) = {} / ({} x {}), "
                              "or leave it out, got {}", b.accumulation, global, micro, st.data, given_steps));
  } else {
    b.accumulation = given_steps;
  }
  b.global_batch = micro * st.data * b.accumulation;
  if (st.kind == StrategyKind::Dp && b.accumulation > 1)
    training.at("global_batch").fail(fmt::format(
        "DataParallel (strategy dp) runs one step per optimizer step: expected micro_batch x GPUs = {} x {} = {}, got {}",
        micro, st.data, micro * st.data, b.global_batch));
  t.batch_per_gpu = pipelined ? micro * b.accumulation : micro;
  b.measured_at = micro;
}

}  // namespace dtsim
