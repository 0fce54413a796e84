// Simulated collectives against closed forms where nothing contends (8 x H100 on NVSwitch: every
// GPU has one 450 GB/s NVLink port to the switch, NCCL reaches 370 of it): start-up latency from
// NCCL's tables (x the hop-latency scale, + launch overhead) plus bytes over the bottleneck rate.
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/comm_layout.hpp"
#include "sim/collectives/nccl_tests_sweep.hpp"
#include "sim/engine/engine.hpp"
#include "sim/topology/topology_builder.hpp"
#include "sim/util/json_reader.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <set>

using namespace dtsim;

namespace {

double simulated_us(const Topology& t, CollectiveOp op, double bytes, NcclAlgo algo, NcclProto proto)
{
  CollectiveOptions o;
  o.filter.algos = {algo};
  o.filter.protos = {proto};
  const auto points = simulate_nccl_tests_sweep(t, op, {static_cast<std::uint64_t>(bytes)}, o);
  return points.at(0).time_us;
}

constexpr double kNvlinkRate = 450e9 * 370.0 / 450.0;  // bytes/s per GPU, H100 default efficiency
constexpr double kLaunch = 2.5, kScale = 2.0;  // NcclParams defaults (us, factor), one GPU per thread
// Transfers do not pay the links' latencies: NCCL's per-hop latencies in the start-up include them.

}  // namespace

TEST_CASE("ring AllReduce, AllGather, ReduceScatter on one NVSwitch node")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  const double S = 256.0 * 1024 * 1024;
  // AllReduce: 2(n-1) steps of S/n; latency 8.4 + 2(n-1) x 3.4 us (Ring/Simple over NVLink).
  const double ar = kLaunch + 8.4 + kScale * 2 * (n - 1) * 3.4 + 2.0 * (n - 1) / n * S / kNvlinkRate * 1e6;
  CHECK(simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(ar).epsilon(0.01));
  // AllGather / ReduceScatter: n-1 steps of S/n (S = total buffer).
  const double ag = kLaunch + 8.4 + kScale * (n - 1) * 3.4 + 1.0 * (n - 1) / n * S / kNvlinkRate * 1e6;
  CHECK(simulated_us(t, CollectiveOp::AllGather, S, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(ag).epsilon(0.01));
  CHECK(simulated_us(t, CollectiveOp::ReduceScatter, S, NcclAlgo::Ring, NcclProto::Simple) ==
        doctest::Approx(ag).epsilon(0.01));
  // LL128 moves 120/128 payload (NCCL's 0.92): the transfer part is 1/0.92 longer.
  const double ar128 = kLaunch + 14.0 + kScale * 14 * 1.9 + 2.0 * (n - 1) / n * S / (0.92 * kNvlinkRate) * 1e6;
  CHECK(simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Ring, NcclProto::LL128) ==
        doctest::Approx(ar128).epsilon(0.01));
}

TEST_CASE("pipelined Broadcast chain and AllToAll on one NVSwitch node")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  const double S = 64.0 * 1024 * 1024;
  // Broadcast: a chain of n-1 streamed hops, NCCL's 512 KiB chunk per channel, the layout's one
  // ring standing for 16 channels (8 MiB, also S/8): S/R + (n-2) chunk hops.
  const double c = std::min(512.0 * 1024 * 16, S / 8);
  const double bc = kLaunch + 8.4 + kScale * n * 4.0 + S / kNvlinkRate * 1e6 + (n - 2) * c / kNvlinkRate * 1e6;
  CHECK(simulated_us(t, CollectiveOp::Broadcast, S, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bc).epsilon(0.01));
  // AllToAll: every GPU sends (n-1)/n of its buffer through its one port at once.
  const double a2a = kLaunch + 8.4 + kScale * 3.4 + (n - 1.0) / n * S / kNvlinkRate * 1e6;
  CHECK(simulated_us(t, CollectiveOp::AllToAll, S, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(a2a).epsilon(0.01));
}

TEST_CASE("NVLS AllReduce: (1 + 1/n) S through each port at NVLink x NVLS efficiency")
{
  const Topology t = load_topology("hgx-h100");
  const int n = 8;
  const double S = 4.0 * 1024 * 1024 * 1024;
  const double rate = kNvlinkRate * 0.85;
  const double bandwidth_us = (1.0 + 1.0 / n) * S / rate * 1e6;
  const double t_us = simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Nvls, NcclProto::Simple);
  CHECK(t_us >= bandwidth_us);
  CHECK(t_us == doctest::Approx(bandwidth_us).epsilon(0.03));  // plus start-up and a small fill chunk
}

TEST_CASE("ring across nodes: each channel leaves through its own NIC (2 x 8 A100, 8 x 200 Gb/s)")
{
  const Topology t = load_topology("dgx-a100", 2);
  const int n = 16;
  const double S = 1024.0 * 1024 * 1024;
  const double nic_rate = 8 * 25e9 * 0.96;  // the ring's bottleneck: all NICs of a node
  const double bound_us = 2.0 * (n - 1) / n * S / nic_rate * 1e6;
  const double t_us = simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Ring, NcclProto::Simple);
  // Start-up: Ring/Simple over 2 nodes, 8.4 + 28 x 3.4 + 2 x 14 us, x 1.4 (NCCL's multi-node ring
  // correction), the hop part x the scale, + launch.
  const double startup_us = kLaunch + 8.4 + kScale * (1.4 * (8.4 + 28 * 3.4 + 2 * 14) - 8.4);
  CHECK(t_us == doctest::Approx(bound_us + startup_us).epsilon(0.02));
}

TEST_CASE("ring LL128 of one GPU per node runs at NCCL's cap on its own NIC, not a fraction of the node's NICs")
{
  // A data-parallel group of a tensor-parallel layout: one A100 on each of 24 DGX A100 nodes, each
  // leaving through its own 200 Gb/s NIC (25 GB/s x 0.96). LL128 moves 0.92 of that, or NCCL's cap
  // (channels x perChMaxRingLL128Bw) where lower, times A100's measured LL128 rate scale. Before,
  // the ring was rated at all 8 NICs of a node, which cut it to 1/8 of that (32 ms for 25 MB).
  const nlohmann::json doc = {{"base", "dgx-a100"}, {"gpus_per_node", 1}};
  const Topology t = build_topology(JsonReader(doc, "t.json"), 24);
  const NcclSystem s = make_comm_layout(t, t.gpus()).system;
  CHECK(s.channels == 1);
  const double S = 64.0 * 1024 * 1024;
  const double cap = nccl_protocol_cap_gbps(NcclProto::LL128, s) * 1e9;
  REQUIRE(cap > 0);
  const double rate = std::min(0.92 * 25e9 * 0.96, cap) * NcclParams::defaults(80).ll128_rate_scale;
  const double n = 24;
  const double bandwidth_us = 2 * (n - 1) / n * S / rate * 1e6;
  const double t_us = simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Ring, NcclProto::LL128);
  CHECK(t_us >= bandwidth_us);
  CHECK(t_us <= 1.1 * bandwidth_us);  // plus the start-up (~0.2 ms at 24 nodes)
}

TEST_CASE("tree LL and LL128 across nodes run at NCCL's protocol rate, not the links'")
{
  // 2 x 8 H100: NCCL's Tree/LL bus rate is llMaxBw (39 GB/s, 2 nodes, Intel row), the algorithm
  // rate half of it, times the tree correction for the size (0.5 at 128 KiB, 0.8 at 8 MiB); the
  // links would give far more. Start-up: NCCL's Tree/LL latency + launch (LL hops at the tables').
  const Topology t = load_topology("hgx-h100", 2);
  const NcclSystem s = make_comm_layout(t, t.gpus()).system;
  for (const auto& [bytes, correction] : {std::pair{128.0 * 1024, 0.5}, std::pair{8.0 * 1024 * 1024, 0.8}}) {
    const double startup = kLaunch + *nccl_latency_us(CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::LL, s);
    const double expected = startup + bytes / (39.0 / 2 * correction * 1e9) * 1e6;
    CHECK(simulated_us(t, CollectiveOp::AllReduce, bytes, NcclAlgo::Tree, NcclProto::LL) ==
          doctest::Approx(expected).epsilon(0.02));
  }
  // LL128: min(bus x 120/128, channels x perChMaxTreeLL128Bw) / 2 x correction, nccl_cost's rate.
  const double bytes = 2.0 * 1024 * 1024;
  const NcclCost c = *nccl_cost(CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::LL128, s, bytes);
  const double startup = kLaunch + c.latency_us;
  CHECK(simulated_us(t, CollectiveOp::AllReduce, bytes, NcclAlgo::Tree, NcclProto::LL128) ==
        doctest::Approx(startup + bytes / (c.alg_bw * 1e9) * 1e6).epsilon(0.02));
}

TEST_CASE("two collectives at once contend for the same links")
{
  const Topology t = load_topology("hgx-h100");
  const double S = 256.0 * 1024 * 1024;
  CollectiveCall call;
  call.ranks = t.gpus();
  call.bytes = S;
  CollectiveOptions o;
  o.filter.algos = {NcclAlgo::Ring};
  o.filter.protos = {NcclProto::Simple};
  auto run = [&](int copies) {
    TaskGraph g;
    std::vector<int> done;
    for (int c = 0; c < copies; ++c) {
      const auto tasks = add_collective(g, t, call, std::vector<std::vector<int>>(call.ranks.size()), o);
      done.insert(done.end(), tasks.done.begin(), tasks.done.end());
    }
    const auto spans = simulate(t, g);
    double end = 0;
    for (int id : done)
      end = std::max(end, spans[static_cast<std::size_t>(id)].end);
    return end;
  };
  const double one = run(1), two = run(2);
  CHECK(two > 1.9 * one * 0.95);
  CHECK(two < 2.0 * one);
}

TEST_CASE("rings stay on their rail between nodes, as NCCL alternates them (connect.cc); trees too")
{
  for (const int nodes : {4, 3}) {
    CAPTURE(nodes);
    const Topology t = load_topology("hgx-h100", nodes);
    const CommLayout c = make_comm_layout(t, t.gpus());
    REQUIRE(c.rings.size() == 8);
    for (std::size_t k = 0; k < c.rings.size(); ++k) {
      const auto& ring = c.rings[k];
      int crossings = 0;
      for (std::size_t p = 0; p < ring.size(); ++p) {
        const Device& from = t.device(c.ranks[static_cast<std::size_t>(ring[p])]);
        const Device& to = t.device(c.ranks[static_cast<std::size_t>(ring[(p + 1) % ring.size()])]);
        if (from.node != to.node)
          crossings += from.local_index != to.local_index;  // one NIC per GPU: another rail
      }
      // An odd node count leaves the hop from the last node back to node 0 across rails (NCCL too).
      CHECK(crossings == (nodes % 2 == 0 ? 0 : 1));
      // The channel's path (the trees' chains) enters every node at the same local position.
      const auto& path = c.channel_paths[k];
      for (std::size_t p = 8; p < path.size(); p += 8)
        CHECK(t.device(c.ranks[static_cast<std::size_t>(path[p])]).local_index ==
              t.device(c.ranks[static_cast<std::size_t>(path[0])]).local_index);
    }
  }
  // So a ring's traffic between nodes never reaches the spine: a ring AllReduce on 4 nodes takes no
  // route through it.
  const Topology t = load_topology("hgx-h100", 4);
  TaskGraph g;
  CollectiveOptions o;
  o.filter.algos = {NcclAlgo::Ring};
  o.filter.protos = {NcclProto::Simple};
  add_collective(g, t, {CollectiveOp::AllReduce, t.gpus(), 64e6, 0, "ring", TaskCategory::AllReduce}, std::vector<std::vector<int>>(32), o);
  int network = 0;
  for (const Task& task : g.tasks()) {
    if (task.kind != TaskKind::Transfer || task.src == task.dst)
      continue;
    for (const Hop& h : t.route(task.src, task.dst)) {
      CHECK(t.link(h.link).name.find("spine") == std::string::npos);
      network += t.link(h.link).kind == LinkKind::Network;
    }
  }
  CHECK(network > 0);
}

TEST_CASE("with fewer NICs than GPUs a ring leaves each node from a GPU beside a NIC (search.cc's sortNet)")
{
  // DGX A100 with one NIC (beside GPUs 0 and 1) and with two (beside 0-1 and 4-5), two nodes. Every
  // crossing between nodes starts and ends at a GPU on a NIC's PCIe switch (2 hops to it); before,
  // the one-NIC ring left from GPU 7, behind the other socket, and ran at 8.4 GB/s against NCCL's
  // own 11.7 (1 GiB, Ring/Simple, 175 Gb/s).
  for (const int nics : {1, 2}) {
    CAPTURE(nics);
    const nlohmann::json doc = {{"base", "dgx-a100"}, {"nic", {{"count_per_node", nics}, {"gbps", 175}}}};
    const Topology t = build_topology(JsonReader(doc, "t.json"), 2);
    const CommLayout c = make_comm_layout(t, t.gpus());
    REQUIRE(c.rings.size() == static_cast<std::size_t>(nics));
    std::set<int> exit_nics;
    for (const auto& ring : c.rings)
      for (std::size_t p = 0; p < ring.size(); ++p) {
        const int from = c.ranks[static_cast<std::size_t>(ring[p])];
        const int to = c.ranks[static_cast<std::size_t>(ring[(p + 1) % ring.size()])];
        if (t.device(from).node == t.device(to).node)
          continue;
        std::size_t near = SIZE_MAX;
        int nearest = -1;
        for (const int nic : t.nics_of_node(t.device(from).node))
          if (t.route(from, nic).size() < near) {
            near = t.route(from, nic).size();
            nearest = t.device(nic).local_index;
          }
        CHECK(near == 2);
        if (t.device(from).node == 0)
          exit_nics.insert(nearest);
      }
    CHECK(exit_nics.size() == static_cast<std::size_t>(nics));  // two NICs: each ring leaves by its own
  }
  const nlohmann::json doc = {{"base", "dgx-a100"}, {"nic", {{"count_per_node", 1}, {"gbps", 175}}}};
  const Topology t = build_topology(JsonReader(doc, "t.json"), 2);
  const NcclSystem s = make_comm_layout(t, t.gpus()).system;
  const double S = 1024.0 * 1024 * 1024;
  const double model_us = nccl_cost(CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, s, S)->time_us;
  CHECK(simulated_us(t, CollectiveOp::AllReduce, S, NcclAlgo::Ring, NcclProto::Simple) < 1.1 * model_us);
}
