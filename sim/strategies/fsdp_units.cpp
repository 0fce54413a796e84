// See fsdp_units.hpp.
#include "sim/strategies/fsdp_units.hpp"

namespace dtsim {

FsdpUnitBytes fsdp_unit_bytes(const Model& model, const ShardUnits& su, const FsdpOptions& opt, int tensor, double ubytes,
                              double rbytes)
{
  const int T = tensor;
  const auto U = su.units.size();
  FsdpUnitBytes b{std::vector<double>(U), std::vector<double>(U), std::vector<double>(U), 0.0};
  for (std::size_t u = 0; u < U; ++u) {
    b.params[u] = su.units[u].params / T;
    b.gather_bytes[u] = gathered_bytes(su.units[u], opt) / T;
  }
  // A replicated token embedding (FsdpOptions::replicate_embedding) is whole in each tensor rank's root.
  b.embedding_whole = opt.replicate_embedding ? embedding_params(model) * (1 - 1.0 / T) : 0.0;
  b.params[0] += b.embedding_whole;
  b.gather_bytes[0] += b.embedding_whole * ubytes;
  for (std::size_t u = 0; u < U; ++u)
    b.reduce_bytes[u] = b.params[u] * rbytes;
  return b;
}

FsdpUnitOrder fsdp_unit_order(const ShardUnits& su)
{
  const auto U = su.units.size();
  FsdpUnitOrder o{std::vector<int>(U, -1), std::vector<int>(U, -1), {}};
  for (std::size_t s = 0; s < su.segments.size(); ++s) {
    const auto u = static_cast<std::size_t>(su.segments[s].unit);
    o.last_segment[u] = static_cast<int>(s);
    if (o.first_segment[u] < 0)
      o.first_segment[u] = static_cast<int>(s);
  }
  for (int s = static_cast<int>(su.segments.size()) - 1; s >= 0; --s) {
    const int u = su.segments[static_cast<std::size_t>(s)].unit;
    if (u != 0 && o.last_segment[static_cast<std::size_t>(u)] == s)
      o.backward_order.push_back(u);
  }
  return o;
}

}  // namespace dtsim
