// Ring algorithms on every channel ring of the layout (each ring its own neighbour order, so the
// rings load different NVLinks and NICs). AllReduce is a reduce-scatter then an all-gather:
// 2(n-1) steps in which every rank sends one chunk (ring bytes / n) to its successor; AllGather
// and ReduceScatter are n-1 such steps. A rank's step k waits only for the chunk it received in
// step k-1 on the same ring, so rings pipeline without global barriers. Broadcast and Reduce are
// a chain from (to) the root along each ring, every hop a stream of NCCL's chunks.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

std::vector<int> expand_ring(Expansion& x)
{
  const int n = x.n();
  const auto& rings = x.layout.rings;
  const double ring_bytes = x.call.bytes / static_cast<double>(rings.size());
  int steps = n - 1;
  if (x.call.op == CollectiveOp::AllReduce)
    steps = 2 * (n - 1);
  // Consecutive ring steps are merged into at most kMaxRingSteps super-steps (same bytes per
  // neighbour, same uncontended time on a homogeneous ring) to bound the flow count at scale.
  constexpr int kMaxRingSteps = 16;
  const int super_steps = x.merge_ring_steps ? std::min(steps, kMaxRingSteps) : steps;
  std::vector<double> step_chunks(static_cast<std::size_t>(super_steps), 0.0);
  for (int s = 0; s < steps; ++s)
    step_chunks[static_cast<std::size_t>(s * super_steps / steps)] += ring_bytes / n;
  steps = super_steps;
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < rings.size(); ++k) {
    const auto& ring = rings[k];
    std::vector<int> received(static_cast<std::size_t>(n), -1);  // by ring position
    for (int step = 0; step < steps; ++step) {
      std::vector<int> sent(static_cast<std::size_t>(n));
      for (int pos = 0; pos < n; ++pos) {
        const int r = ring[static_cast<std::size_t>(pos)];
        const int next = ring[static_cast<std::size_t>((pos + 1) % n)];
        std::vector<int> deps{step == 0 ? x.start[static_cast<std::size_t>(r)] : received[static_cast<std::size_t>(pos)]};
        sent[static_cast<std::size_t>(pos)] =
            x.transfer(x.device(r), x.device(next), step_chunks[static_cast<std::size_t>(step)],
                       fmt::format("ring {} step {}", k, step + 1), std::move(deps));
      }
      for (int pos = 0; pos < n; ++pos)
        received[static_cast<std::size_t>((pos + 1) % n)] = sent[static_cast<std::size_t>(pos)];
    }
    for (int pos = 0; pos < n; ++pos)
      finals[static_cast<std::size_t>(ring[static_cast<std::size_t>(pos)])].push_back(received[static_cast<std::size_t>(pos)]);
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = finals[static_cast<std::size_t>(r)].size() == 1
                                            ? finals[static_cast<std::size_t>(r)][0]
                                            : x.join(r, finals[static_cast<std::size_t>(r)], "done");
  return done;
}

std::vector<int> expand_ring_chain(Expansion& x)
{
  const int n = x.n();
  const bool reduce = x.call.op == CollectiveOp::Reduce;
  const auto& rings = x.layout.rings;
  const double ring_bytes = x.call.bytes / static_cast<double>(rings.size());
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < rings.size(); ++k) {
    const auto& ring = rings[k];
    // NCCL's Broadcast/Reduce chunk: one step of the Simple buffer (512 KiB) per channel; LL and
    // LL128 pass data on line by line.
    const double chunk = pipeline_chunk(NcclAlgo::Ring, x.proto, ring_bytes, x.channels_of_ring(k));
    int root_pos = 0;
    for (int p = 0; p < n; ++p)
      if (ring[static_cast<std::size_t>(p)] == x.call.root)
        root_pos = p;
    // Chain order: Broadcast root, root+1, ...; Reduce root+1, ..., root (ends at the root).
    std::vector<int> chain;
    for (int h = 0; h < n; ++h)
      chain.push_back(ring[static_cast<std::size_t>((root_pos + (reduce ? h + 1 : h)) % n)]);
    const int first = chain[0];
    Expansion::Stream last{x.start[static_cast<std::size_t>(first)], x.start[static_cast<std::size_t>(first)]};
    for (int h = 0; h + 1 < n; ++h) {
      const int from = chain[static_cast<std::size_t>(h)], to = chain[static_cast<std::size_t>(h + 1)];
      last = x.stream(x.device(from), x.device(to), ring_bytes, chunk,
                      {last.head, x.start[static_cast<std::size_t>(from)], x.start[static_cast<std::size_t>(to)]},
                      {last.tail}, fmt::format("ring {} hop {}", k, h + 1));
      // A sender is done when its last chunk left; a receiver when its last chunk arrived.
      finals[static_cast<std::size_t>(from)].push_back(last.tail);
      finals[static_cast<std::size_t>(to)].push_back(last.tail);
    }
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = x.join(r, finals[static_cast<std::size_t>(r)], "done");
  return done;
}

}  // namespace dtsim
