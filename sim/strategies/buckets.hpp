// DDP's gradient buckets, as PyTorch's compute_bucket_assignment_by_size builds them: parameter
// tensors walked in gradient-ready order (reverse registration order), a bucket closed as soon as
// its size reaches the current limit (so it may exceed it by one tensor), the first limit
// first_bucket_bytes (1 MiB) and every later one bucket_cap_bytes (25 MiB).
#pragma once

#include "sim/model/model.hpp"

#include <cstdint>
#include <vector>

namespace dtsim {

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

}  // namespace dtsim
