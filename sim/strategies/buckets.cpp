#include "sim/strategies/buckets.hpp"

namespace dtsim {

std::vector<Bucket> assign_buckets(const Model& model, double bytes_per_element, double first_bucket_bytes,
                                   double bucket_cap_bytes)
{
  std::vector<Bucket> buckets;
  Bucket open;
  bool has_open = false;
  for (std::size_t l = model.layers.size(); l-- > 0;) {
    const auto& tensors = model.layers[l].param_tensors;
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      open.bytes += static_cast<double>(*t) * bytes_per_element;
      open.tensors += 1;
      open.ready_after_layer = l;
      has_open = true;
      const double limit = buckets.empty() ? first_bucket_bytes : bucket_cap_bytes;
      if (open.bytes >= limit) {
        buckets.push_back(open);
        open = Bucket{};
        has_open = false;
      }
    }
  }
  if (has_open)
    buckets.push_back(open);
  return buckets;
}

}  // namespace dtsim
