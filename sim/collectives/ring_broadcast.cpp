// Broadcast as NCCL runs it on a ring: a chain from the root through every rank, pipelined in
// chunks, so that a large buffer takes about S/B plus one chunk time per extra hop.
#include "sim/collectives/ring_broadcast.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

CollectiveTasks add_ring_broadcast(TaskGraph& graph, const CollectiveCall& call,
                                   const std::vector<std::vector<int>>& start_after)
{
  constexpr double kChunkBytes = 4.0 * 1024 * 1024;  // NCCL's default Simple buffer
  constexpr int kMaxChunks = 16;                      // bounds the number of flows
  const auto n = static_cast<int>(call.ranks.size());
  const auto rank = [&](int hop) { return static_cast<std::size_t>((call.root + hop) % n); };
  CollectiveTasks out;
  out.done.assign(static_cast<std::size_t>(n), -1);
  if (n == 1) {
    out.done[0] = graph.add_delay(call.ranks[0], 0.0, call.label + " (1 rank)", call.category, start_after[0]);
    return out;
  }
  const int chunks = std::clamp(static_cast<int>(std::ceil(call.bytes / kChunkBytes)), 1, kMaxChunks);
  const double chunk_bytes = call.bytes / chunks;
  // last[h]: the transfer that last delivered a chunk across hop h (from rank(h) to rank(h+1)).
  std::vector<int> last(static_cast<std::size_t>(n - 1), -1);
  for (int c = 0; c < chunks; ++c) {
    for (int h = 0; h < n - 1; ++h) {
      std::vector<int> deps;
      if (h == 0 && c == 0)
        deps = start_after[rank(0)];
      if (h > 0) {
        deps.push_back(last[static_cast<std::size_t>(h - 1)]);  // this chunk arrived at the sender
        if (c == 0)
          deps.insert(deps.end(), start_after[rank(h)].begin(), start_after[rank(h)].end());
      }
      if (c > 0)
        deps.push_back(last[static_cast<std::size_t>(h)]);  // previous chunk left this hop
      if (h == n - 2 && c == 0)
        deps.insert(deps.end(), start_after[rank(h + 1)].begin(), start_after[rank(h + 1)].end());
      last[static_cast<std::size_t>(h)] =
          graph.add_transfer(call.ranks[rank(h)], call.ranks[rank(h + 1)], chunk_bytes,
                             fmt::format("{} chunk {}/{} hop {}", call.label, c + 1, chunks, h + 1), call.category,
                             std::move(deps));
    }
  }
  out.done[rank(0)] = last[0];
  for (int h = 0; h < n - 1; ++h)
    out.done[rank(h + 1)] = last[static_cast<std::size_t>(h)];
  return out;
}

}  // namespace dtsim
