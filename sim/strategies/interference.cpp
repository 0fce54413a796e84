#include "sim/strategies/interference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

namespace dtsim {

namespace {

/// The most a collective is assumed to take from compute: kernels always progress (NCCL's blocks
/// spend part of their time waiting on flags, and the HBM controller does not starve a client).
constexpr double kMaxLoss = 0.95;

double element_bytes(Precision precision)
{
  return precision == Precision::Fp32 || precision == Precision::Tf32 ? 4.0 : 2.0;
}

}  // namespace

double memory_bound_share(const Model& model, const GpuSpec& gpu, Precision precision, double batch)
{
  const double peak = gpu.peak_flops(precision);
  if (!(peak > 0) || !(gpu.memory_bandwidth > 0))
    return 0.0;
  const double e = element_bytes(precision);
  double memory_time = 0;
  double total_time = 0;
  double input = model.input_elems;  // elements per sample entering the layer
  for (const Layer& layer : model.layers) {
    const double bytes = batch * (input + layer.activation_elems) * e + static_cast<double>(layer.params()) * e;
    const double t_math = batch * layer.fwd_flops / peak;
    const double t_memory = bytes / gpu.memory_bandwidth;
    if (t_memory > t_math)
      memory_time += t_memory;
    total_time += std::max(t_math, t_memory);
    if (layer.activation_elems > 0)
      input = layer.activation_elems;
  }
  return total_time > 0 ? memory_time / total_time : 0.0;
}

double compute_loss(const InflightCollective& c, const GpuSpec& gpu, double memory_bound)
{
  if (!(c.seconds > 0))
    return 0.0;
  const double sm = gpu.sms > 0 ? std::min(1.0, static_cast<double>(c.channels) / gpu.sms) : 0.0;
  const double hbm =
      gpu.memory_bandwidth > 0 ? std::min(1.0, kHbmBytesPerBusByte * c.bus_bytes / c.seconds / gpu.memory_bandwidth) : 0.0;
  const double m = std::clamp(memory_bound, 0.0, 1.0);
  return std::min(kMaxLoss, (1 - m) * sm + m * hbm);
}

std::vector<double> backward_slowdown(const std::vector<double>& segment_s,
                                      const std::vector<InflightCollective>& collectives, const GpuSpec& gpu,
                                      double memory_bound)
{
  std::vector<double> extra(segment_s.size(), 0.0);
  // The NCCL stream: collective k runs over [begin[k], end[k]) once it has been queued.
  std::vector<double> begin;
  std::vector<double> end;
  std::vector<double> loss;
  double now = 0;
  for (std::size_t j = 0; j < segment_s.size(); ++j) {
    double work = segment_s[j];  // seconds at full speed
    const double started = now;
    for (std::size_t k = 0; k < begin.size() && work > 0; ++k) {
      if (end[k] <= now)
        continue;
      if (begin[k] > now) {  // a gap on the stream: full speed until the next collective
        const double free = std::min(work, begin[k] - now);
        now += free;
        work -= free;
        if (!(work > 0))
          break;
      }
      const double rate = 1.0 - loss[k];
      const double done_here = std::min(work, (end[k] - now) * rate);
      now += done_here / rate;
      work -= done_here;
    }
    now += std::max(0.0, work);
    extra[j] = std::max(0.0, (now - started) - segment_s[j]);  // never below full speed (rounding gave -1e-17)
    if (j < collectives.size()) {  // bucket j is ready now: queue its collective
      const double start = std::max(now, end.empty() ? 0.0 : end.back());
      begin.push_back(start);
      end.push_back(start + collectives[j].seconds);
      loss.push_back(compute_loss(collectives[j], gpu, memory_bound));
    }
  }
  return extra;
}

std::string nccl_slowdown_note(const GpuSpec& gpu, int channels, double memory_bound, double seconds_per_iteration)
{
  return fmt::format("compute beside the buckets' NCCL kernels: {:.3f} ms longer per iteration (up to {} CTA(s), one per "
                     "channel, of {} SMs; {:.0f} HBM bytes per bus byte of {:.0f} GB/s; {:.0f}% of backward memory-bound "
                     "by roofline)",
                     seconds_per_iteration * 1e3, channels, gpu.sms, kHbmBytesPerBusByte, gpu.memory_bandwidth / 1e9,
                     100 * memory_bound);
}

}  // namespace dtsim
