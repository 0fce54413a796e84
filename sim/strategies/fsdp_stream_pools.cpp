// See fsdp_stream_pools.hpp.
#include "sim/strategies/fsdp_stream_pools.hpp"

#include "sim/strategies/memory_timeline.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

Fsdp2StreamPools fsdp2_stream_pools(const ShardUnits& units, double tensor, double shard,
                                    const std::vector<double>& param_bytes, double reduce_bytes, double grad_bytes,
                                    bool offloaded)
{
  Fsdp2StreamPools pools;
  if (units.units.empty() || !(tensor > 0) || !(shard > 1))
    return pools;
  // A unit's flat buffers are padded so that every rank's shard has the same size
  // (_get_dim0_padded_size): shard x ceil(elements / shard).
  const auto padded = [shard](double elems) { return std::ceil(elems / shard) * shard; };
  double root = 0, largest = 0, largest_shard = 0, grads = 0;  // AllGather outputs in bytes; elements
  for (std::size_t u = 0; u < units.units.size(); ++u) {
    const double elems = padded(units.units[u].params / tensor);
    const double bytes = elems * (u < param_bytes.size() ? param_bytes[u] : param_bytes.back());
    if (u == 0)
      root = bytes;
    else
      largest = std::max(largest, bytes);
    largest_shard = std::max(largest_shard, elems / shard);
    grads += allocator_block_bytes(elems / shard * grad_bytes);
  }
  // Copy-in stream: the root's output, then a unit's while the root's is still held, then two units'
  // (the later ones fit the blocks freed before them: every block unit has the same size).
  pools.all_gather = allocator_block_bytes(root) + allocator_block_bytes(largest);
  pools.all_gather = std::max(pools.all_gather, 2 * allocator_block_bytes(largest));
  // Reduce-scatter stream: every unit's sharded gradient, plus the reduce-dtype output of the unit
  // being reduced when it is cast to the parameters' dtype.
  pools.reduce_scatter = offloaded ? allocator_block_bytes(largest_shard * grad_bytes) : grads;
  if (reduce_bytes != grad_bytes)
    pools.reduce_scatter += allocator_block_bytes(largest_shard * reduce_bytes);
  return pools;
}

}  // namespace dtsim
