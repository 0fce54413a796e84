#include "sim/strategies/buckets.hpp"

#include "sim/util/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

void check_buckets_per_iteration(const JsonReader& strategy, const char* key, double calls, double given, double least,
                                 const char* unit, double params)
{
  if (calls <= kMaxBucketsPerIteration)
    return;
  // Up to 3 significant digits, so that the size the message names is within the bound.
  if (least > 0 && std::isfinite(least)) {
    const double step = std::pow(10.0, std::floor(std::log10(least)) - 2);
    least = std::ceil(least / step * (1 - 1e-12)) * step;
  }
  strategy.fail_member_or_here(
      key,
      fmt::format("expected a bucket size of at least {:.3g} {} (at most {:.0f} collectives per iteration for {:.3g} "
                  "parameters), got {:.6g} ({:.3g} collectives)",
                  least, unit, kMaxBucketsPerIteration, params, given, calls),
      fmt::format("expected a {} of at least {:.3g} {} (at most {:.0f} collectives per iteration for {:.3g} parameters); "
                  "its default, {:.6g}, gives {:.3g} collectives",
                  key, least, unit, kMaxBucketsPerIteration, params, given, calls));
}

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

std::vector<Bucket> assign_capped_buckets(const Model& model, double bytes_per_element, double cap_bytes)
{
  std::vector<Bucket> buckets;
  Bucket open;
  for (std::size_t l = model.layers.size(); l-- > 0;) {
    const auto& tensors = model.layers[l].param_tensors;
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      const double bytes = static_cast<double>(*t) * bytes_per_element;
      if (open.tensors > 0 && open.bytes + bytes > cap_bytes) {
        buckets.push_back(open);
        open = Bucket{};
      }
      open.bytes += bytes;
      open.tensors += 1;
      open.ready_after_layer = l;
    }
  }
  if (open.tensors > 0)
    buckets.push_back(open);
  return buckets;
}

std::vector<std::pair<int, double>> partition_slices(double first, double last, double total, int ranks)
{
  std::vector<std::pair<int, double>> out;
  if (ranks < 1 || total <= 0 || last <= first)
    return out;
  const double size = total / ranks;
  for (int j = std::clamp(static_cast<int>(std::floor(first / size)), 0, ranks - 1); j < ranks; ++j) {
    const double lo = std::max(first, j * size), hi = j + 1 == ranks ? last : std::min(last, (j + 1) * size);
    if (hi > lo)
      out.emplace_back(j, hi - lo);
    if (hi >= last)
      break;
  }
  return out;
}

}  // namespace dtsim
