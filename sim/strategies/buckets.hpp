// Gradient buckets.
// DDP's, as PyTorch's compute_bucket_assignment_by_size builds them: parameter tensors walked in
// gradient-ready order (reverse registration order), a bucket closed as soon as its size reaches
// the current limit (so it may exceed it by one tensor), the first limit first_bucket_bytes (1 MiB)
// and every later one bucket_cap_bytes (25 MiB).
// DeepSpeed ZeRO's (deepspeed/runtime/zero/stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads,
// stage3.py's reduce_ready_partitions_and_remove_grads): the bucket is reduced before a tensor that
// would take it past reduce_bucket_size ("if bucket.elements + param.numel() > self.reduce_bucket_size"),
// so it never exceeds the cap unless one tensor does.
#pragma once

#include "sim/model/model.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace dtsim {

class JsonReader;

/// Most gradient buckets (so collectives of one kind) per iteration that a plan may hold. The
/// frameworks' defaults give a few dozen even for 1e12 parameters (DeepSpeed's reduce_bucket_size
/// 5e8 elements; PyTorch DDP's 25 MiB buckets, which hold whole tensors, at most one per tensor:
/// Llama 3 405B's 1,263); a tiny bucket size gave millions, each a collective over every rank, and
/// a plan that outgrew memory (DDP, 100,000 layers of 1,000 parameters on 32 GPUs at
/// bucket_cap_mb 0.001: 100,000 buckets, std::bad_alloc after 11 s). ZeRO, DDP and Megatron's
/// data-parallel gradients share it.
constexpr double kMaxBucketsPerIteration = 4096;

/// Refuses (exit 2) a bucket size that gives more than kMaxBucketsPerIteration collectives per
/// iteration: names `key` in the strategy where it is given, else the strategy (its default).
/// `given` and `least` (the smallest size within the bound, rounded up to 3 significant digits) are
/// in `unit` ("elements", "MB"); `params`: the parameters the buckets hold. Returns if within.
void check_buckets_per_iteration(const JsonReader& strategy, const char* key, double calls, double given, double least,
                                 const char* unit, double params);

struct Bucket {
  double bytes = 0;
  std::size_t tensors = 0;
  /// The bucket is complete once backward has passed this layer (the lowest model index among its
  /// tensors' layers, since backward runs from the last layer to the first).
  std::size_t ready_after_layer = 0;
};

/// Buckets in reduction order (bucket 0 holds the last layers' gradients).
std::vector<Bucket> assign_buckets(const Model& model, double bytes_per_element, double first_bucket_bytes,
                                   double bucket_cap_bytes);

/// DeepSpeed ZeRO's buckets in reduction order (bucket 0 holds the last layers' gradients).
std::vector<Bucket> assign_capped_buckets(const Model& model, double bytes_per_element, double cap_bytes);

/// The part of each data rank's partition in a range of the flattened parameters. ZeRO-1/2 split
/// the flat parameters (`total` elements) into `ranks` equal partitions in registration order
/// (stage_1_and_2.py: partition_size = numel / dp world size, partition i on data rank i); returns,
/// for the elements [first, last), (owner, elements) per partition the range touches, in flat
/// order (stage_1_and_2.py average_tensor's rank_and_offsets, slices of one owner merged).
std::vector<std::pair<int, double>> partition_slices(double first, double last, double total, int ranks);

}  // namespace dtsim
