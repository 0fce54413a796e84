#include "sim/strategies/compute_time.hpp"

#include "sim/strategies/attention_rate.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/roofline.hpp"
#include "sim/strategies/saved_tensors.hpp"

#include <fmt/format.h>

#include <numeric>

namespace dtsim {

namespace {
constexpr double kBackwardOverForward = 2.0;

/// The GPU whose FLOPs the compute times are: the compute source's (training.compute.gpu, for a
/// FLOP source) or the cluster's.
GpuSpec compute_gpu(const Scenario& scenario, const GpuSpec& cluster_gpu)
{
  const auto& spec = scenario.training.compute;
  if (spec.source != ComputeSpec::Source::Flops || spec.gpu.empty())
    return cluster_gpu;
  const JsonReader where = scenario.reader().at("training").at("compute");
  return gpu_spec(spec.gpu, where.file(), where.pointer() + "/gpu");
}
}  // namespace

double LayerTimes::fwd_total() const
{
  return std::accumulate(fwd.begin(), fwd.end(), 0.0);
}

double LayerTimes::bwd_total() const
{
  return std::accumulate(bwd.begin(), bwd.end(), 0.0);
}

double half_efficiency_samples_of(const JsonReader& strategy)
{
  const auto h = strategy.find("half_efficiency_samples");
  if (!h)
    return 0;
  const double v = h->as_non_negative();
  if (v > 1e9)
    h->fail(fmt::format("expected a number of samples from 0 to 1e9, got {:g}", v));
  return v;
}

LayerTimes layer_times(const Model& model, const Scenario& scenario, const GpuSpec& cluster_gpu, double samples,
                       double half_efficiency_samples, const TensorSplit& split)
{
  const auto& spec = scenario.training.compute;
  if (spec.source == ComputeSpec::Source::Profile)
    return profiled_layer_times(model, scenario, samples, half_efficiency_samples);
  const JsonReader where = scenario.reader().at("training").at("compute");
  const double total_flops = model.fwd_flops();
  if (!(total_flops > 0))
    where.fail(fmt::format("model \"{}\" has no forward FLOPs to spread compute time over", model.name));

  const GpuSpec gpu = compute_gpu(scenario, cluster_gpu);
  // Seconds per FLOP of each layer against the GEMMs': the fused attention kernel may run slower
  // (attention_rate.hpp); a measured step is spread over the layers by these weighted FLOPs too.
  const double attention_slowdown = 1 / attention_rate_factor(scenario.training, gpu);
  const auto weight = [&](const Layer& l) { return l.kind == "attention" ? attention_slowdown : 1.0; };
  double weighted_flops = 0;
  for (const auto& l : model.layers)
    weighted_flops += l.fwd_flops * weight(l);

  LayerTimes t;
  t.fwd.resize(model.layers.size());
  t.bwd.resize(model.layers.size());
  const double batch = static_cast<double>(scenario.training.batch.measured_at);  // the measurement's batch
  double fwd_seconds = 0;  // whole forward for `samples` samples
  switch (spec.source) {
    case ComputeSpec::Source::StepTime:
      fwd_seconds = spec.compute_share_of_step * spec.step_time_s / (1 + kBackwardOverForward) * samples / batch;
      break;
    case ComputeSpec::Source::Throughput:
      fwd_seconds = spec.compute_share_of_step * batch / spec.single_gpu_throughput / (1 + kBackwardOverForward) * samples / batch;
      break;
    case ComputeSpec::Source::Flops: {
      const double peak = gpu.peak_flops(scenario.training.precision);
      if (!(peak > 0))
        where.fail(fmt::format("GPU {} has no peak FLOP/s for precision {}", gpu.name,
                               to_string(scenario.training.precision)));
      if (spec.model == ComputeSpec::Model::Roofline) {
        if (!(gpu.memory_bandwidth > 0))
          where.fail(fmt::format("GPU {} has no memory bandwidth for the roofline model", gpu.name));
        RooflineSettings rs;
        rs.rates = {peak * spec.efficiency,
                    gpu.memory_bandwidth * roofline_memory_efficiency(spec)};
        const Precision p = scenario.training.precision;
        rs.element_bytes = p == Precision::Fp32 || p == Precision::Tf32 ? 4 : 2;
        rs.attention = scenario.training.attention;
        rs.attention_rate = attention_rate_factor(scenario.training, gpu);
        // Megatron-LM (hybrid) fuses its elementwise kernels, as memory_timeline's `megatron`;
        // torch.compile's Inductor fuses them too (training.compile)
        rs.fused_elementwise = scenario.strategy_spec.kind == StrategyKind::Hybrid || scenario.training.compile;
        rs.fused_rmsnorm = scenario.training.fused_rmsnorm;
        rs.split = split;
        LayerTimes r = roofline_layer_times(model, rs, samples);
        if (half_efficiency_samples > 0)
          for (std::size_t i = 0; i < r.fwd.size(); ++i) {
            r.fwd[i] *= (samples + half_efficiency_samples) / samples;
            r.bwd[i] *= (samples + half_efficiency_samples) / samples;
          }
        return r;
      }
      fwd_seconds = weighted_flops * samples / (peak * spec.efficiency);
      break;
    }
    case ComputeSpec::Source::Profile:
      break;  // handled above
  }
  const double h = half_efficiency_samples;
  if (h > 0) {  // t(b) proportional to b + h, anchored at the measured batch (or at large batch for FLOPs)
    fwd_seconds *= spec.source == ComputeSpec::Source::Flops ? (samples + h) / samples : (samples + h) / (samples * (batch + h) / batch);
  }
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    t.fwd[i] = fwd_seconds * model.layers[i].fwd_flops * weight(model.layers[i]) / weighted_flops;
    t.bwd[i] = kBackwardOverForward * t.fwd[i];
  }
  return t;
}

std::string describe_compute_source(const Scenario& scenario)
{
  const auto& spec = scenario.training.compute;
  switch (spec.source) {
    case ComputeSpec::Source::StepTime:
      return fmt::format("measured single-GPU step {} s at batch {}", spec.step_time_s, scenario.training.batch.measured_at);
    case ComputeSpec::Source::Throughput:
      return fmt::format("measured single-GPU throughput {} samples/s at batch {}", spec.single_gpu_throughput,
                         scenario.training.batch.measured_at);
    case ComputeSpec::Source::Flops:
      if (spec.model == ComputeSpec::Model::Roofline)
        return fmt::format("roofline per kernel: FLOPs at {:.0f}% of the {} peak, bytes at {:.1f}% of its HBM bandwidth{}",
                           spec.efficiency * 100, spec.gpu.empty() ? "cluster GPU's" : spec.gpu,
                           100 * roofline_memory_efficiency(spec),
                           scenario.training.compile ? "; elementwise kernels fused by torch.compile" : "");
      return fmt::format("model FLOPs at {:.0f}% of the {} peak", spec.efficiency * 100,
                         spec.gpu.empty() ? "cluster GPU's" : spec.gpu);
    case ComputeSpec::Source::Profile:
      return fmt::format("measured per-layer profile {} (batch {}{})", spec.profile.file, spec.profile.batch,
                         spec.profile.optimizer_s > 0 ? fmt::format(", optimizer {:.3g} s", spec.profile.optimizer_s)
                                                      : std::string());
  }
  return "";
}

std::string compute_spread_note(const Scenario& scenario, const GpuSpec& cluster_gpu)
{
  const auto& spec = scenario.training.compute;
  const GpuSpec gpu = compute_gpu(scenario, cluster_gpu);
  // (a measured per-layer profile holds the kernels' own times: no rate applies)
  const std::string attention =
      spec.source == ComputeSpec::Source::Profile ? std::string() : attention_rate_note(scenario.training, gpu);
  const std::string tail = attention.empty() ? "" : "; " + attention;
  if (spec.source == ComputeSpec::Source::Flops && spec.model == ComputeSpec::Model::Roofline)
    return "each kernel the longer of its FLOPs and its HBM bytes (GEMMs, attention, LayerNorm, elementwise ops; "
           "sim/strategies/roofline.hpp)" + tail;
  return (attention.empty() ? "backward = 2 x forward, spread over layers by FLOP share"
                            : "backward = 2 x forward, spread over layers by FLOP share, each at its rate") + tail;
}

LayerTimes with_optimizer_step(LayerTimes times, const Scenario& scenario, double params, const GpuSpec& gpu)
{
  if (scenario.training.compute.source != ComputeSpec::Source::Flops || times.optimizer_s > 0)
    return times;
  const Precision p = scenario.training.precision;
  times.optimizer_s = optimizer_seconds(params, memory_rules(scenario), p == Precision::Fp16 || p == Precision::Bf16, gpu);
  return times;
}

}  // namespace dtsim
