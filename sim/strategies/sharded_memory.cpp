// See sharded_memory.hpp.
#include "sim/strategies/sharded_memory.hpp"

#include <algorithm>

namespace dtsim {

namespace {

/// The same memory on each of `ranks` (every rank of a sharded scheme holds the same).
std::vector<GpuMemory> on_each(GpuMemory m, const std::vector<int>& ranks)
{
  std::vector<GpuMemory> out;
  for (int dev : ranks) {
    m.device = dev;
    out.push_back(m);
  }
  return out;
}

}  // namespace

double micro_batch_activations(const Model& model, const Scenario& scenario, const MemoryRules& mem, double micro,
                               int tensor)
{
  const auto L = model.layers.size();
  if (scenario.training.activation_checkpointing == ActivationCheckpointing::Full)
    return full_recompute_activations(model, 0, L, micro, micro, mem.activation_bytes, tensor);
  return activations_in(model, 0, L) / tensor * micro * mem.activation_bytes;
}

std::vector<GpuMemory> sharded_fsdp_memory(const Model& model, const ShardUnits& units, const Scenario& scenario,
                                           const MemoryRules& mem, const FsdpOptions& opt, const std::vector<int>& ranks,
                                           int tensor, double micro, double input_bytes_per_sample)
{
  const double T = tensor;
  const double params = static_cast<double>(model.params()) / T;  // one tensor rank's share of the model
  const double pbytes = dtype_bytes(opt.param_dtype), rbytes = dtype_bytes(opt.reduce_dtype);
  GpuMemory m;
  if (opt.sharding == Sharding::NoShard || opt.shard_group <= 1) {
    m = replica_memory(model, mem, 0, model.layers.size(), 1.0 / T, micro);
  } else {
    const double S = opt.shard_group;
    const double shard = params / S;
    double root = 0, largest = 0, others = 0;
    for (std::size_t u = 0; u < units.units.size(); ++u) {
      const double p = units.units[u].params / T;
      if (u == 0)
        root = p;
      else {
        largest = std::max(largest, p);
        others += p;
      }
    }
    // Gathered units alive at once: the root, plus two under the limiter (FSDP1 limit_all_gathers,
    // FSDP2's two AllGather outputs; forward_prefetch doubles FSDP1's buffer), or every unit when
    // the parameters stay after forward (shard_grad_op; a smaller re-shard world keeps 1/k of each).
    const bool limited = opt.version == 2 || opt.limit_all_gathers;
    double gathered = root + (limited ? (opt.forward_prefetch ? 3 : 2) * largest : others);
    if (!opt.reshard_after_forward)
      gathered = root + others;
    else if (opt.reshard_ranks > 0)
      gathered += others / opt.reshard_ranks;
    m.params = shard * 4 + gathered * pbytes;  // the sharded fp32 parameters, the gathered units
    // The sharded gradient (fp32, the parameters' dtype), the unit's unsharded gradient being
    // reduced (param dtype, cast to reduce dtype), and with no_sync every unsharded gradient.
    m.grads = shard * 4 + largest * std::max(pbytes, rbytes) + (opt.no_sync && scenario.training.batch.accumulation > 1 ? params * pbytes : 0);
    m.optimizer = shard * mem.optimizer_bytes;
    m.activations = micro_batch_activations(model, scenario, mem, micro, tensor);
  }
  m.io = input_bytes_per_sample * micro;
  return on_each(m, ranks);
}

std::vector<GpuMemory> sharded_zero_memory(const Model& model, const Scenario& scenario, const MemoryRules& mem,
                                           const ZeroOptions& opt, const std::vector<int>& ranks, double micro,
                                           double input_bytes_per_sample, double largest_gathered)
{
  const double N = static_cast<double>(ranks.size());
  const double params = static_cast<double>(model.params());
  const bool half = scenario.training.precision == Precision::Fp16 || scenario.training.precision == Precision::Bf16;
  const double model_bytes = half ? 2 : 4;  // the module's own weights and gradients
  // The optimizer's partition: fp32 master weights (half precision only: fp32 training updates the
  // weights themselves) and the optimizer states; stage 2 and 3 also keep the gradient partition
  // in fp32 (DeepSpeed's 18 bytes per parameter = 2 + 4 + 4 + 8 for fp16 with Adam).
  const double master = half ? 4 : 0;
  GpuMemory m;
  m.optimizer = params / N * (master + mem.optimizer_bytes);
  const double bucket = opt.reduce_bucket_elems * model_bytes * (opt.overlap_comm ? 2 : 1);  // DeepSpeed's IPG buffers
  switch (opt.stage) {
    case 1:
      m.params = params * model_bytes;
      m.grads = params * model_bytes + params / N * (half ? 4 : 0);
      break;
    case 2:
      m.params = params * model_bytes;
      m.grads = std::min(params, bucket / model_bytes) * model_bytes + params / N * (half ? 4 : model_bytes);
      break;
    default: {
      // Partitioned parameters and gradients; the fetched modules: the largest module gathered
      // and the prefetch window (stage3_prefetch_bucket_size), and the gradient bucket.
      m.params = params / N * model_bytes + (largest_gathered + opt.prefetch_bucket_elems) * model_bytes;
      m.grads = params / N * (half ? 4 : model_bytes) + std::min(params, opt.reduce_bucket_elems) * model_bytes;
      break;
    }
  }
  m.activations = micro_batch_activations(model, scenario, mem, micro, 1);
  m.io = input_bytes_per_sample * micro;
  return on_each(m, ranks);
}

}  // namespace dtsim
