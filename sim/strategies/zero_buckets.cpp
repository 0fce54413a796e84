// See zero_buckets.hpp.
#include "sim/strategies/zero_buckets.hpp"

#include "sim/strategies/optimizer_step.hpp"

#include <cmath>

namespace dtsim {

ZeroBuckets zero_buckets(const Scenario& scenario, const Model& model, const ZeroOptions& opt, double grad_bytes, int gpus,
                         int shard, bool qgz, const GpuSpec& gpu)
{
  const double grad_elem = grad_bytes, params = static_cast<double>(model.params());
  const int n = gpus, S = shard;
  const bool distributed = n > 1;
  ZeroBuckets z;
  // Gradient buckets of at most reduce_bucket_size elements (DeepSpeed's rule, buckets.hpp): stages
  // 1-2 reduce them, stage 3 reduce-scatters them.
  z.buckets = assign_capped_buckets(model, grad_elem, opt.reduce_bucket_elems * grad_elem);
  const auto& buckets = z.buckets;
  // A bucket is closed only when the next tensor would overflow it, so two consecutive buckets hold
  // more than the cap: 2 x params / cap buckets at most. `least`: a size that keeps the collectives
  // within the bound (buckets.hpp, kMaxBucketsPerIteration). A size left at its default is blamed on
  // the strategy, naming the member that would set it.
  const double least = 2 * params / (kMaxBucketsPerIteration - 1);
  check_buckets_per_iteration(scenario.strategy_options(), "reduce_bucket_size", static_cast<double>(buckets.size()),
                              opt.reduce_bucket_elems, std::ceil(least), "elements", params);
  // contiguous_gradients (config.py's default true): each gradient is copied into the bucket's flat
  // buffer as it joins it (stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads, on the
  // compute stream; stage3.py __add_grad_to_ipg_bucket, on the reduction's stream, where it shares the
  // GPU with the backward beside it), but a tensor larger than the bucket is reduced where it is: a
  // memory-bound copy of the bucket's bytes.
  z.copy_s.resize(buckets.size());
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const Bucket& b = buckets[k];
    z.copy_s[k] = b.tensors == 1 && b.bytes > opt.reduce_bucket_elems * grad_elem ? 0.0 : copy_seconds(b.bytes, gpu);
  }
  // Stages 1-2: each bucket's slices by owner (partition_slices); without
  // use_multi_rank_bucket_allreduce each is reduced to its owner.
  z.slices.resize(buckets.size());
  if (opt.stage < 3 && distributed) {
    double end = params;  // bucket 0 ends the flat parameters; every tensor is in one bucket
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      const double begin = end - buckets[k].bytes / grad_elem;
      z.slices[k] = partition_slices(begin, end, params, n);
      end = begin;
    }
  }
  // Before its collective each reduced bucket is divided in place by the world size and, where
  // DeepSpeed hands the collective more than one tensor, flattened into a new one: stage_1_and_2.py
  // average_tensor does tensor.div_(world size), then allreduce_and_scatter -> allreduce_bucket:
  // self.flatten(bucket) of the bucket's slices, one per partition it touches, in one AllReduce
  // (_flatten_dense_tensors: a torch.cat, but a view of a single tensor; reduce_scatter false,
  // gradient_reduction_w_predivide, and use_multi_rank_bucket_allreduce false, allreduce_no_retain,
  // reduce each slice where it is); stage 3's coalesced_collectives.py reduce_scatter_coalesced
  // torch.cats the bucket's tensors' interleaved partitions (but a single tensor that divides
  // evenly) and divides that in place (.div_(world_sz)). Each a memory-bound pass over the bucket,
  // on the stream of its collective (the compute stream without overlap_comm). qgZ's chain is its own.
  z.flatten_s.assign(buckets.size(), 0.0);
  for (std::size_t k = 0; k < buckets.size() && distributed && !qgz; ++k) {
    const Bucket& b = buckets[k];
    const bool flattened = opt.stage == 3 ? !(b.tensors == 1 && std::fmod(b.bytes / grad_elem, S) == 0)
                                          : opt.reduce_scatter && opt.multi_rank_bucket_allreduce && z.slices[k].size() > 1;
    z.flatten_s[k] = copy_seconds(b.bytes, gpu) * (flattened ? 2 : 1);
  }
  return z;
}

}  // namespace dtsim
