// Ring AllReduce as NCCL runs it on one ring: a reduce-scatter then an all-gather, 2(n-1) steps in
// which every rank sends one chunk (S/n bytes) to its successor. A rank's step k waits only for the
// chunk it received in step k-1 (no global barrier), so the ring pipelines naturally.
#include "sim/collectives/collective.hpp"
#include "sim/collectives/ring_broadcast.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dtsim {

const char* to_string(CollectiveOp op)
{
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Gather: return "gather";
    case CollectiveOp::Scatter: return "scatter";
    case CollectiveOp::AllToAll: return "alltoall";
    case CollectiveOp::SendRecv: return "sendrecv";
  }
  return "?";
}

namespace {

CollectiveTasks add_ring_allreduce(TaskGraph& graph, const CollectiveCall& call,
                                   const std::vector<std::vector<int>>& start_after)
{
  const auto n = static_cast<int>(call.ranks.size());
  CollectiveTasks out;
  if (n == 1) {
    out.done.push_back(graph.add_delay(call.ranks[0], 0.0, call.label + " (1 rank)", call.category, start_after[0]));
    return out;
  }
  const double chunk = call.bytes / n;
  // received[r]: the transfer that last delivered a chunk to rank r.
  std::vector<int> received(static_cast<std::size_t>(n), -1);
  const int steps = 2 * (n - 1);
  for (int step = 0; step < steps; ++step) {
    std::vector<int> sent(static_cast<std::size_t>(n));
    const char* phase = step < n - 1 ? "reduce-scatter" : "all-gather";
    for (int r = 0; r < n; ++r) {
      const int next = (r + 1) % n;
      std::vector<int> deps = step == 0 ? start_after[static_cast<std::size_t>(r)]
                                        : std::vector<int>{received[static_cast<std::size_t>(r)]};
      sent[static_cast<std::size_t>(r)] =
          graph.add_transfer(call.ranks[static_cast<std::size_t>(r)], call.ranks[static_cast<std::size_t>(next)], chunk,
                             fmt::format("{} {} step {}", call.label, phase, step + 1), call.category, std::move(deps));
    }
    for (int r = 0; r < n; ++r)
      received[static_cast<std::size_t>((r + 1) % n)] = sent[static_cast<std::size_t>(r)];
  }
  out.done.assign(received.begin(), received.end());
  return out;
}

}  // namespace

CollectiveTasks add_collective(TaskGraph& graph, const Topology& /*topology*/, const CollectiveCall& call,
                               const std::vector<std::vector<int>>& start_after)
{
  if (call.ranks.empty())
    throw std::logic_error("collective with no ranks");
  if (start_after.size() != call.ranks.size())
    throw std::logic_error("collective: one start_after list per rank expected");
  if (call.op == CollectiveOp::Broadcast)
    return add_ring_broadcast(graph, call, start_after);
  if (call.op != CollectiveOp::AllReduce)
    throw std::logic_error(fmt::format("collective {} is not modelled yet", to_string(call.op)));
  return add_ring_allreduce(graph, call, start_after);
}

}  // namespace dtsim
