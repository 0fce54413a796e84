// Point-to-point patterns, as NCCL runs them with ncclSend/ncclRecv inside a group: every transfer
// starts at once and the links share. AllToAll: each rank sends bytes/n to every other rank.
// SendRecv (nccl-tests' sendrecv_perf): rank r sends `bytes` to r+1. Gather / Scatter: bytes/n
// from every rank to the root / from the root to every rank.
#include "sim/collectives/expansion.hpp"

#include <fmt/format.h>

namespace dtsim {

std::vector<int> expand_direct(Expansion& x)
{
  const int n = x.n();
  std::vector<std::vector<int>> finals(static_cast<std::size_t>(n));
  auto send = [&](int from, int to, double bytes) {
    const int t = x.transfer(x.device(from), x.device(to), bytes, fmt::format("{} -> {}", from, to),
                             {x.start[static_cast<std::size_t>(from)], x.start[static_cast<std::size_t>(to)]});
    finals[static_cast<std::size_t>(from)].push_back(t);
    finals[static_cast<std::size_t>(to)].push_back(t);
  };
  switch (x.call.op) {
    case CollectiveOp::AllToAll:
      for (int r = 0; r < n; ++r)
        for (int d = 1; d < n; ++d)
          send(r, (r + d) % n, x.call.bytes / n);
      break;
    case CollectiveOp::SendRecv:
      for (int r = 0; r < n; ++r)
        send(r, (r + 1) % n, x.call.bytes);
      break;
    case CollectiveOp::Gather:
      for (int r = 0; r < n; ++r)
        if (r != x.call.root)
          send(r, x.call.root, x.call.bytes / n);
      break;
    case CollectiveOp::Scatter:
      for (int r = 0; r < n; ++r)
        if (r != x.call.root)
          send(x.call.root, r, x.call.bytes / n);
      break;
    default: break;
  }
  std::vector<int> done(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& f = finals[static_cast<std::size_t>(r)];
    if (f.empty())
      f.push_back(x.start[static_cast<std::size_t>(r)]);
    done[static_cast<std::size_t>(r)] = x.join(r, f, "done");
  }
  return done;
}

}  // namespace dtsim
