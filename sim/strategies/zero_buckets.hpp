// ZeRO's gradient buckets of at most reduce_bucket_size elements (DeepSpeed's rule, buckets.hpp),
// stages 1-2's slices of each by the partitions' owners, and the memory-bound passes DeepSpeed makes
// over each before its collective: the copy of its gradients into the bucket's flat buffer
// (contiguous_gradients) and the flatten and division in place.
#pragma once

#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/buckets.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <utility>
#include <vector>

namespace dtsim {

struct ZeroBuckets {
  std::vector<Bucket> buckets;  ///< in reduction order (bucket 0 holds the last layers' gradients)
  std::vector<double> copy_s;   ///< per bucket: the copy of its gradients into it, seconds (0: reduced where it is)
  /// Stages 1-2 over more than one rank, per bucket: (owner, elements) of each partition it touches.
  std::vector<std::vector<std::pair<int, double>>> slices;
  std::vector<double> flatten_s;  ///< per bucket: the flatten and division before its collective, seconds (0: none)
};

/// The buckets of `model`'s gradients (`grad_bytes` per element) over `gpus` ranks, partitioned over
/// `shard` (stage 3); `qgz`: ZeRO++ qgZ reduces them (its chain is its own: no flatten). Errors
/// (exit 2) name reduce_bucket_size where it gives more than kMaxBucketsPerIteration buckets.
ZeroBuckets zero_buckets(const Scenario& scenario, const Model& model, const ZeroOptions& opt, double grad_bytes, int gpus,
                         int shard, bool qgz, const GpuSpec& gpu);

}  // namespace dtsim
