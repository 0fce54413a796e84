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

TEST_CASE("ideal Broadcast and Reduce: a chain of n-1 hops pipelined in m chunks, (m + n - 2) chunk times")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  const int m = 16;  // 64 MiB in 512 KiB chunks, at most 16
  const double chunk = S / m / R + W;
  CHECK(ideal_seconds(t, CollectiveOp::Broadcast, S, t.gpus()) == doctest::Approx((m + n - 2) * chunk).epsilon(1e-6));
  CHECK(ideal_seconds(t, CollectiveOp::Reduce, S, t.gpus()) == doctest::Approx((m + n - 2) * chunk).epsilon(1e-6));
  // 1 MiB: two chunks of 512 KiB.
  const double small = 1024.0 * 1024;
  CHECK(ideal_seconds(t, CollectiveOp::Broadcast, small, t.gpus()) ==
        doctest::Approx((2 + n - 2) * (small / 2 / R + W)).epsilon(1e-6));
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
  // Two ranks: reduce 1 -> 0, then broadcast 0 -> 1, pipelined over chunks w_j (no shared port):
  // a two-stage flow shop with equal stage times p_j = w_j/R + W, makespan sum p + max p.
  const auto w = pipeline_chunk_sizes(S, 512.0 * 1024);
  REQUIRE(w.size() == 12);
  const double sum_p = S / R + static_cast<double>(w.size()) * W;
  const double max_p = *std::max_element(w.begin(), w.end()) / R + W;
  CHECK(ideal_seconds(t, CollectiveOp::AllReduce, S, {t.gpus()[0], t.gpus()[1]}, true) ==
        doctest::Approx(sum_p + max_p).epsilon(1e-6));
  // Eight ranks, one chain: 14 hops (7 up, 7 down) and only 12 chunks, so the pipeline never
  // fills. A flow shop of 14 stages: at least sum p + 13 max p with every hop at the full port
  // rate; at most the same with every hop at half of it (a middle GPU's port carries one up and
  // one down flow at once). Also each middle GPU's port must carry 2S.
  const double lower = std::max(2 * S / R, sum_p + 13 * max_p);
  const double upper = 2 * S / R + 2 * 13 * (max_p - W) + 26 * W + static_cast<double>(w.size()) * W;
  const double eight = ideal_seconds(t, CollectiveOp::AllReduce, S, t.gpus(), true);
  CHECK(eight >= lower * (1 - 1e-9));
  CHECK(eight <= upper);
  MESSAGE("8-rank ideal tree: ", eight * 1e6, " us in [", lower * 1e6, ", ", upper * 1e6, "] us");
}
