// Ring algorithms on every channel ring of the layout (each ring its own neighbour order, so the
// rings load different NVLinks and NICs). AllReduce is a reduce-scatter then an all-gather:
// 2(n-1) steps in which every rank sends one chunk (ring bytes / n) to its successor; AllGather
// and ReduceScatter are n-1 such steps. Causality, as NCCL's kernels run (one CTA per channel
// working through its steps in order): a rank's step k on a ring waits for the chunk it received
// in step k-1, for its own step k-1 on that ring, and (step 0) for its own and its successor's
// join. Real step k carries data of the k ranks before it, so when steps are merged into
// super-steps a super-step also waits for the join of every rank whose data it carries (see
// JoinWindows). Broadcast and Reduce are a chain from (to) the root along each ring, every hop a
// stream of NCCL's chunks.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

namespace {

/// Per ring position p and window length L: a task after which the ranks at positions
/// p-L+1 .. p (cyclically) have all joined the collective, built by doubling (windows of 1, 2, 4
/// ... ranks, each the join of two halves), so that a merged ring step can wait for exactly the
/// ranks whose data it carries with two extra dependencies and O(n log n) zero-time joins.
class JoinWindows {
public:
  JoinWindows(Expansion& x, const std::vector<int>& ring, std::size_t k) : x_(x), ring_(ring), k_(k)
  {
    std::vector<int> level;
    for (int r : ring)
      level.push_back(x.start[static_cast<std::size_t>(r)]);
    levels_.push_back(std::move(level));
  }

  /// The task closing the window of `length` positions ending at `pos` (1 <= length <= n).
  int window(int pos, int length)
  {
    const int n = static_cast<int>(ring_.size());
    length = std::clamp(length, 1, n);
    std::size_t j = 0;
    while ((2 << j) <= length)
      ++j;
    build(j);
    const int size = 1 << j;
    const int a = at(j, pos), b = at(j, pos - (length - size));
    if (a == b)
      return a;
    return x_.join(ring_[static_cast<std::size_t>(wrap(pos))], {a, b},
                   fmt::format("ring {} ranks {} back joined", k_, length - 1));
  }

private:
  int wrap(int pos) const
  {
    const int n = static_cast<int>(ring_.size());
    return ((pos % n) + n) % n;
  }
  int at(std::size_t j, int pos) const { return levels_[j][static_cast<std::size_t>(wrap(pos))]; }
  void build(std::size_t j)
  {
    while (levels_.size() <= j) {
      const std::size_t lower = levels_.size() - 1;
      const int half = 1 << lower;
      std::vector<int> level;
      for (int pos = 0; pos < static_cast<int>(ring_.size()); ++pos)
        level.push_back(x_.join(ring_[static_cast<std::size_t>(pos)], {at(lower, pos), at(lower, pos - half)},
                                fmt::format("ring {} {} ranks joined", k_, 2 * half)));
      levels_.push_back(std::move(level));
    }
  }

  Expansion& x_;
  const std::vector<int>& ring_;
  std::size_t k_;
  std::vector<std::vector<int>> levels_;
};

}  // namespace

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
  std::vector<int> last_real_step(static_cast<std::size_t>(super_steps), 0);  // 0-based, within the super-step
  for (int s = 0; s < steps; ++s) {
    const auto super = static_cast<std::size_t>(s * super_steps / steps);
    step_chunks[super] += ring_bytes / n;
    last_real_step[super] = s;
  }
  steps = super_steps;
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < rings.size(); ++k) {
    const auto& ring = rings[k];
    JoinWindows joined(x, ring, k);
    std::vector<int> received(static_cast<std::size_t>(n), -1);  // by ring position
    std::vector<int> sent(static_cast<std::size_t>(n), -1);      // by ring position: its previous step
    for (int step = 0; step < steps; ++step) {
      std::vector<int> now(static_cast<std::size_t>(n));
      for (int pos = 0; pos < n; ++pos) {
        const auto p = static_cast<std::size_t>(pos);
        const int r = ring[p];
        const int next = ring[static_cast<std::size_t>((pos + 1) % n)];
        std::vector<int> deps;
        if (step == 0) {
          deps = {x.start[static_cast<std::size_t>(r)], x.start[static_cast<std::size_t>(next)]};
        } else {
          deps = {received[p], sent[p]};
          // Real step s carries the data of the s ranks before this one; the chain of received
          // chunks only reaches `step` ranks back.
          const int back = last_real_step[static_cast<std::size_t>(step)];
          if (back > step)
            deps.push_back(joined.window(pos, back + 1));
        }
        now[p] = x.transfer(x.device(r), x.device(next), step_chunks[static_cast<std::size_t>(step)],
                            fmt::format("ring {} step {}", k, step + 1), std::move(deps));
      }
      for (int pos = 0; pos < n; ++pos) {
        received[static_cast<std::size_t>((pos + 1) % n)] = now[static_cast<std::size_t>(pos)];
        sent[static_cast<std::size_t>(pos)] = now[static_cast<std::size_t>(pos)];
      }
    }
    // A rank is done when its own last send is out and its last chunk has arrived.
    for (int pos = 0; pos < n; ++pos) {
      auto& f = finals[static_cast<std::size_t>(ring[static_cast<std::size_t>(pos)])];
      f.push_back(received[static_cast<std::size_t>(pos)]);
      f.push_back(sent[static_cast<std::size_t>(pos)]);
    }
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    done[static_cast<std::size_t>(r)] = x.join(r, finals[static_cast<std::size_t>(r)], "done");
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
