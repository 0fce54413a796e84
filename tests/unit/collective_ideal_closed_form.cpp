// The textbook expansion of every collective (CollectiveOptions::ideal: no protocol latencies,
// links at line rate) against its closed form where nothing contends: 8 x H100 on one NVSwitch,
// every GPU one 450 GB/s port each way (GPU -> switch -> GPU: two 0.3 us link latencies per hop).
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/expansion.hpp"
#include "sim/engine/engine.hpp"
#include "sim/topology/topology_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace dtsim;

namespace {

constexpr double R = 450e9;       // bytes/s per port and direction
constexpr double W = 2 * 0.3e-6;  // wire latency of one GPU -> GPU hop, s
constexpr double S = 64.0 * 1024 * 1024;

double ideal_seconds(const Topology& t, CollectiveOp op, double bytes, std::vector<int> ranks, bool tree = false)
{
  CollectiveCall call;
  call.op = op;
  call.ranks = std::move(ranks);
  call.bytes = bytes;
  CollectiveOptions o;
  o.ideal = true;
  if (tree)
    o.filter.algos = {NcclAlgo::Tree};
  TaskGraph g;
  const auto tasks = add_collective(g, t, call, std::vector<std::vector<int>>(call.ranks.size()), o);
  const auto spans = simulate(t, g);
  double end = 0;
  for (int id : tasks.done)
    end = std::max(end, spans[static_cast<std::size_t>(id)].end);
  return end;
}

}  // namespace

TEST_CASE("ideal ring AllReduce, AllGather, ReduceScatter: 2(n-1) or n-1 steps of S/n")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  CHECK(ideal_seconds(t, CollectiveOp::AllReduce, S, t.gpus()) ==
        doctest::Approx(2.0 * (n - 1) * (S / n / R + W)).epsilon(1e-6));
  CHECK(ideal_seconds(t, CollectiveOp::AllGather, S, t.gpus()) == doctest::Approx((n - 1) * (S / n / R + W)).epsilon(1e-6));
  CHECK(ideal_seconds(t, CollectiveOp::ReduceScatter, S, t.gpus()) ==
        doctest::Approx((n - 1) * (S / n / R + W)).epsilon(1e-6));
}

TEST_CASE("ideal Broadcast and Reduce: a chain of n-1 hops streamed in chunks c, S/R + (n-2)(c/R + W) + 3W")
{
  // Each hop is a stream (first chunk, bulk, last chunk): the first chunk reaches the end of the
  // chain after n-1 chunk times, the last chunk leaves the root at S/R + 3W (three transfers).
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  // NCCL's Simple chunk (512 KiB) per channel; the one ring stands for the 16 channels of an H100
  // (8 MiB, which is also S/8).
  const double c = std::min(512.0 * 1024 * 16, S / 8);
  const double expected = S / R + 3 * W + (n - 2) * (c / R + W);
  CHECK(ideal_seconds(t, CollectiveOp::Broadcast, S, t.gpus()) == doctest::Approx(expected).epsilon(1e-6));
  CHECK(ideal_seconds(t, CollectiveOp::Reduce, S, t.gpus()) == doctest::Approx(expected).epsilon(1e-6));
  // 1 MiB: the chunk shrinks to S/8 (NCCL keeps enough chunks in flight).
  const double small = 1024.0 * 1024;
  CHECK(ideal_seconds(t, CollectiveOp::Broadcast, small, t.gpus()) ==
        doctest::Approx(small / R + 3 * W + (n - 2) * (small / 8 / R + W)).epsilon(1e-6));
}

TEST_CASE("ideal Gather, Scatter, AllToAll, SendRecv: one port carries (n-1)/n S, or S")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  // Gather: n-1 pieces of S/n share the root's incoming port; Scatter: its outgoing port.
  CHECK(ideal_seconds(t, CollectiveOp::Gather, S, t.gpus()) == doctest::Approx((n - 1.0) / n * S / R + W).epsilon(1e-6));
  CHECK(ideal_seconds(t, CollectiveOp::Scatter, S, t.gpus()) == doctest::Approx((n - 1.0) / n * S / R + W).epsilon(1e-6));
  // AllToAll: every port carries n-1 pieces of S/n each way at once.
  CHECK(ideal_seconds(t, CollectiveOp::AllToAll, S, t.gpus()) == doctest::Approx((n - 1.0) / n * S / R + W).epsilon(1e-6));
  // SendRecv: rank r sends all S to r+1; each port carries one flow.
  CHECK(ideal_seconds(t, CollectiveOp::SendRecv, S, t.gpus()) == doctest::Approx(S / R + W).epsilon(1e-6));
}

TEST_CASE("ideal tree AllReduce")
{
  const Topology t = load_topology("hgx-h100");
  // Two ranks: reduce 1 -> 0, then broadcast 0 -> 1, two streamed hops on opposite directions of
  // the ports (nothing shared): S/R + 3W + (c/R + W), the broadcast one chunk behind the reduction.
  const double c = std::min(512.0 * 1024 * 16, S / 8);  // as for Broadcast
  CHECK(ideal_seconds(t, CollectiveOp::AllReduce, S, {t.gpus()[0], t.gpus()[1]}, true) ==
        doctest::Approx(S / R + 3 * W + (c / R + W)).epsilon(1e-6));
  // Eight ranks, one chain: 14 streamed hops (7 up, 7 down). A middle GPU's port carries one up
  // and one down stream in each direction at once, so 2S per port direction: at least 2S/R plus
  // the fill of 13 chunk hops; at most every hop at half the port rate.
  const double lower = S / R + 3 * W + 13 * (c / R + W);
  const double upper = 2 * S / R + 3 * W + 13 * (2 * c / R + W);
  const double eight = ideal_seconds(t, CollectiveOp::AllReduce, S, t.gpus(), true);
  CHECK(eight >= lower * (1 - 1e-9));
  CHECK(eight <= upper);
  MESSAGE("8-rank ideal tree: ", eight * 1e6, " us in [", lower * 1e6, ", ", upper * 1e6, "] us");
}
