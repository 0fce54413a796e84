// NCCL's cost model (tuning.cc 2.30) against the worked example of the reference (8 x A100 on
// NVSwitch: 12 channels x 20 GB/s), and NCCL's choice at small, medium and large sizes.
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/nccl_search.hpp"
#include "sim/collectives/nccl_tuning.hpp"

#include <doctest/doctest.h>

using namespace dtsim;

namespace {
NcclSystem a100x8()
{
  NcclSystem s;
  s.ranks = 8;
  s.nodes = 1;
  s.compute_capability = 80;
  s.intra_hw = NcclHw::NvLink;
  s.channels = 12;
  s.bw_intra = s.bw_inter = 20;
  return s;
}
constexpr double MiB = 1024.0 * 1024.0;
}  // namespace

TEST_CASE("latencies and bus bandwidths of the worked example")
{
  const auto s = a100x8();
  const auto op = CollectiveOp::AllReduce;
  CHECK(*nccl_latency_us(op, NcclAlgo::Ring, NcclProto::LL, s) == doctest::Approx(15.0));
  CHECK(*nccl_latency_us(op, NcclAlgo::Ring, NcclProto::LL128, s) == doctest::Approx(40.6));
  CHECK(*nccl_latency_us(op, NcclAlgo::Ring, NcclProto::Simple, s) == doctest::Approx(56.0));
  CHECK(*nccl_latency_us(op, NcclAlgo::Tree, NcclProto::LL, s) == doctest::Approx(15.2));
  CHECK(*nccl_latency_us(op, NcclAlgo::Tree, NcclProto::LL128, s) == doctest::Approx(31.5));
  CHECK(*nccl_latency_us(op, NcclAlgo::Tree, NcclProto::Simple, s) == doctest::Approx(64.4));
  CHECK(nccl_bus_bw(op, NcclAlgo::Ring, NcclProto::LL, s) == doctest::Approx(87.7));
  CHECK(nccl_bus_bw(op, NcclAlgo::Ring, NcclProto::LL128, s) == doctest::Approx(220.8));
  CHECK(nccl_bus_bw(op, NcclAlgo::Ring, NcclProto::Simple, s) == doctest::Approx(240));
  CHECK(nccl_bus_bw(op, NcclAlgo::Tree, NcclProto::LL, s) == doctest::Approx(58.1).epsilon(0.01));
  CHECK(nccl_bus_bw(op, NcclAlgo::Tree, NcclProto::LL128, s) == doctest::Approx(171.7).epsilon(0.01));
  CHECK(nccl_bus_bw(op, NcclAlgo::Tree, NcclProto::Simple, s) == doctest::Approx(220.8));
  CHECK(nccl_alg_bw(op, NcclAlgo::Ring, NcclProto::Simple, s) == doctest::Approx(137.1).epsilon(0.001));
  CHECK(nccl_alg_bw(op, NcclAlgo::Tree, NcclProto::Simple, s) == doctest::Approx(110.4));
}

TEST_CASE("NCCL's choice: LL when small, LL128 around 4 MiB, Simple when large")
{
  const auto s = a100x8();
  const auto op = CollectiveOp::AllReduce;
  CHECK(nccl_choose(op, s, 64 * 1024).proto == NcclProto::LL);
  CHECK(nccl_choose(op, s, 64 * 1024).algo == NcclAlgo::Ring);
  CHECK(nccl_choose(op, s, 4 * MiB).proto == NcclProto::LL128);
  const auto big = nccl_choose(op, s, 100 * MiB);
  CHECK(big.algo == NcclAlgo::Ring);
  CHECK(big.proto == NcclProto::Simple);
  CHECK(big.time_us == doctest::Approx(821).epsilon(0.01));
  CHECK(nccl_choose(op, s, 25 * MiB).time_us == doctest::Approx(247).epsilon(0.02));
}

TEST_CASE("NCCL_ALGO / NCCL_PROTO restrict the choice; NVLS only with NVSwitch SHARP")
{
  auto s = a100x8();
  NcclFilter f;
  f.protos = {NcclProto::Simple};
  CHECK(nccl_choose(CollectiveOp::AllReduce, s, 1024, f).proto == NcclProto::Simple);
  f.algos = {NcclAlgo::Tree};
  CHECK(nccl_choose(CollectiveOp::AllReduce, s, 1024, f).algo == NcclAlgo::Tree);
  CHECK_FALSE(nccl_cost(CollectiveOp::AllReduce, NcclAlgo::Nvls, NcclProto::Simple, s, 1e9));
  s.compute_capability = 90;
  s.nvls = true;
  s.nvls_bw_intra = 370.8 / 16;
  s.nvls_bw_inter = 370.8 / 16;
  CHECK(nccl_choose(CollectiveOp::AllReduce, s, 1e9).algo == NcclAlgo::Nvls);
  CHECK(nccl_choose(CollectiveOp::Broadcast, s, 1e9).algo == NcclAlgo::Ring);  // Ring only
  CHECK(parse_nccl_algo("nvlstree") == NcclAlgo::NvlsTree);
  CHECK(parse_nccl_proto("LL128") == NcclProto::LL128);
  CHECK_FALSE(parse_nccl_proto("fast"));
}

TEST_CASE("channels drop for small operations (enqueue.cc threshold)")
{
  const auto s = a100x8();
  // From the 24 channels ncclTopoPostset leaves (12 searched, each run twice).
  CHECK(nccl_op_channels(NcclAlgo::Ring, NcclProto::Simple, s, 1e9) == 24);
  CHECK(nccl_op_channels(NcclAlgo::Ring, NcclProto::Simple, s, 64 * 1024) == 2);  // 64 KiB = 2 x 512 threads x 64 B
  CHECK(nccl_op_channels(NcclAlgo::Ring, NcclProto::Simple, s, 3 * 32768) == 3);
  CHECK(nccl_op_channels(NcclAlgo::Ring, NcclProto::Simple, s, 20 * 32768) == 20);
}

TEST_CASE("a communicator runs twice its searched channels, four times on Hopper across nodes below 16 (connect.cc)")
{
  auto s = a100x8();
  CHECK(nccl_comm_channels(s) == 24);
  s.channels = 12;  // 18 NVLinks of an H100: the search's 12 rings of 30 GB/s
  s.compute_capability = 90;
  CHECK(nccl_comm_channels(s) == 24);
  s.channels = 40;  // more than NCCL's MAXCHANNELS / 2: capped at 64
  CHECK(nccl_comm_channels(s) == 64);
  s.nodes = 2;
  s.ranks = 16;
  s.channels = 4;  // 4 NICs of 50 GB/s: 8 after duplication, then 16
  s.bw_intra = s.bw_inter = 50;
  CHECK(nccl_comm_channels(s) == 16);
  s.channels = 8;  // 8 NICs: 16 after duplication, no more
  CHECK(nccl_comm_channels(s) == 16);
  s.channels = 4;
  s.bw_intra = s.bw_inter = 25;  // 200 Gb/s NICs: bwIntra not above 45
  CHECK(nccl_comm_channels(s) == 8);
  s.compute_capability = 80;
  s.bw_intra = s.bw_inter = 50;
  CHECK(nccl_comm_channels(s) == 8);
}

TEST_CASE("latency split into intra-node and inter-node hops (2 nodes x 8 A100); only intra hops are scaled")
{
  auto s = a100x8();
  s.ranks = 16;
  s.nodes = 2;
  const auto op = CollectiveOp::AllReduce;
  // Tree: 2 ((nRanks/nNodes - 1) intraLat + log2(nNodes) interLat), NVLINK LL 0.6, NET LL 5.0.
  const auto tree = *nccl_latency_parts(op, NcclAlgo::Tree, NcclProto::LL, s);
  CHECK(tree.base == doctest::Approx(6.8));
  CHECK(tree.intra == doctest::Approx(2 * 7 * 0.6));
  CHECK(tree.inter == doctest::Approx(2 * 1 * 5.0));
  CHECK(*nccl_latency_us(op, NcclAlgo::Tree, NcclProto::LL, s) == doctest::Approx(6.8 + 8.4 + 10.0));
  // Ring: 30 steps, 2 across nodes at NET LL 2.7, the others at max(0.6, netOverhead 1.0).
  const auto ring = *nccl_latency_parts(op, NcclAlgo::Ring, NcclProto::LL, s);
  CHECK(ring.intra == doctest::Approx(28 * 1.0));
  CHECK(ring.inter == doctest::Approx(2 * 2.7));
  // Start-up, one GPU per thread: launch 2.5 + base 6.8 + 1.0 x intra 8.4 (LL hops at the table's
  // values) + 1.0 x inter 10.0; a thread driving 8 GPUs pays 8 launches.
  NcclCost cost;
  cost.algo = NcclAlgo::Tree;
  cost.proto = NcclProto::LL;
  cost.latency_us = tree.total();
  const NcclParams p = NcclParams::defaults(80);
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, p, 1) == doctest::Approx(2.5 + 6.8 + 8.4 + 10.0));
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, p, 8) == doctest::Approx(20 + 6.8 + 8.4 + 10.0));
  // Tree/LL128 hops at the table's too (2-4 node H100 trees); Simple hops at twice; A100's
  // Ring/LL128 hops at 0.59 (its measured LL128 start-up, nccl_params.cpp).
  cost.proto = NcclProto::LL128;
  const auto ll128 = *nccl_latency_parts(op, NcclAlgo::Tree, NcclProto::LL128, s);
  cost.latency_us = ll128.total();
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, p, 1) ==
        doctest::Approx(2.5 + ll128.base + ll128.intra + ll128.inter));
  cost.algo = NcclAlgo::Ring;
  const auto ring128 = *nccl_latency_parts(op, NcclAlgo::Ring, NcclProto::LL128, s);
  cost.latency_us = ring128.total();
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, p, 1) ==
        doctest::Approx(2.5 + ring128.base + 0.59 * ring128.intra + ring128.inter));
  // A protocol's fitted network scale replaces the common one for that protocol only.
  NcclParams fitted = p;
  fitted.net_proto_hop_latency_scale[static_cast<std::size_t>(NcclProto::LL128)] = 3.0;
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, fitted, 1) ==
        doctest::Approx(2.5 + ring128.base + 0.59 * ring128.intra + 3.0 * ring128.inter));
  cost.algo = NcclAlgo::Tree;
  cost.proto = NcclProto::LL;
  cost.latency_us = tree.total();
  CHECK(collective_startup_us(collective_latency_parts(s, op, cost), cost, fitted, 1) ==
        doctest::Approx(2.5 + 6.8 + 8.4 + 10.0));
}

TEST_CASE("2 nodes with few NICs: a tree's graph keeps up to twice the network bandwidth inside the node, so Tree wins")
{
  // search.cc pass 2 raises a tree graph's bwIntra up to 2 x bwInter ("2 nodes or collnet");
  // tuning.cc reads bwIntra on <= 2 nodes. A ring's bwIntra stays bwInter. 8 A100 and 4 x 100 Gb/s
  // per node (AWS p4d): ring bus 4 x 12.5 = 50 GB/s, algorithm 50 x 16/30 = 26.7; tree bus
  // min(0.92 x 4 x 25, 4 x 23.6) = 92, algorithm 46: NCCL runs Tree (p4d's measured 2-node busbw,
  // 76 GB/s, is beyond what a ring could reach on 50 GB/s of NICs).
  auto s = a100x8();
  s.ranks = 16;
  s.nodes = 2;
  s.channels = 4;
  s.bw_intra = s.bw_inter = 12.5;
  s.tree_bw_intra = 25;
  const auto op = CollectiveOp::AllReduce;
  CHECK(nccl_bus_bw(op, NcclAlgo::Ring, NcclProto::Simple, s) == doctest::Approx(50));
  CHECK(nccl_bus_bw(op, NcclAlgo::Tree, NcclProto::Simple, s) == doctest::Approx(92));
  CHECK(nccl_choose(op, s, 1024 * MiB).algo == NcclAlgo::Tree);
  // Eight 200 Gb/s NICs (DGX A100): ring 8 x 25 = 200 against tree min(0.92 x 8 x 30, 8 x 23.6):
  // Ring, as the 2-node DGX A100 table measures (182 GB/s, under the NICs' 200).
  s.channels = 8;
  s.bw_intra = s.bw_inter = 25;
  s.tree_bw_intra = 30;
  CHECK(nccl_choose(op, s, 1024 * MiB).algo == NcclAlgo::Ring);
  // Beyond 2 nodes tuning.cc reads bwInter for every algorithm.
  s.nodes = 4;
  s.ranks = 32;
  CHECK(nccl_bus_bw(op, NcclAlgo::Tree, NcclProto::Simple, s) == doctest::Approx(std::min(0.92 * 8 * 25, 8 * 17.8)));
}

TEST_CASE("NCCL's per-link NVLink bandwidth by compute capability (ncclTopoNVLinkBw, topo.cc)")
{
  CHECK(nccl_nvlink_bw_per_link(100) == doctest::Approx(40.1));
  CHECK(nccl_nvlink_bw_per_link(90) == doctest::Approx(20.6));
  CHECK(nccl_nvlink_bw_per_link(89) == doctest::Approx(20.0));  // Ada: not SM86's 12
  CHECK(nccl_nvlink_bw_per_link(87) == doctest::Approx(20.0));  // Orin
  CHECK(nccl_nvlink_bw_per_link(86) == doctest::Approx(12.0));  // A30, A40
  CHECK(nccl_nvlink_bw_per_link(80) == doctest::Approx(20.0));
  CHECK(nccl_nvlink_bw_per_link(70) == doctest::Approx(20.0));
  CHECK(nccl_nvlink_bw_per_link(60) == doctest::Approx(18.0));
  CHECK(nccl_nvlink_bw_per_link(52) == doctest::Approx(20.0));  // the SM80 default below SM60
}

TEST_CASE("NCCL's ring search on an NVSwitch node (search.cc): rings and their speed by architecture")
{
  // H100, 18 NVLinks x 20.6: 6 x 60 (360 < 370.8; 50, 40 and 30 find no more), duplicated to 12 x 30;
  // 24 CTAs after connect.cc's doubling, as NCCL prints on a p5.48xlarge.
  const auto h100 = nccl_nvswitch_ring_search(18 * nccl_nvlink_bw_per_link(90), 90);
  CHECK(h100.channels == 12);
  CHECK(h100.bw == doctest::Approx(30));
  // A100, 12 x 20: 6 x 40 reaches the total, duplicated to 12 x 20.
  const auto a100 = nccl_nvswitch_ring_search(12 * nccl_nvlink_bw_per_link(80), 80);
  CHECK(a100.channels == 12);
  CHECK(a100.bw == doctest::Approx(20));
  // B200, 18 x 40.1: 8 x 90, duplicated to 16 x 45.
  const auto b200 = nccl_nvswitch_ring_search(18 * nccl_nvlink_bw_per_link(100), 100);
  CHECK(b200.channels == 16);
  CHECK(b200.bw == doctest::Approx(45));
  // V100 on NVSwitch (DGX-2), 6 x 20: 3 x 40, duplicated to 6 x 20.
  const auto v100 = nccl_nvswitch_ring_search(6 * nccl_nvlink_bw_per_link(70), 70);
  CHECK(v100.channels == 6);
  CHECK(v100.bw == doctest::Approx(20));
  // 215 GB/s: 7 x 30 (30 beats 60, 50 and 40; 24 and below find no more). Duplicated on Ampere
  // (14 x 15), not on Hopper (compute capability above 80, under 50 GB/s, more than 4 rings).
  const auto hopper = nccl_nvswitch_ring_search(215, 90);
  CHECK(hopper.channels == 7);
  CHECK(hopper.bw == doctest::Approx(30));
  const auto ampere = nccl_nvswitch_ring_search(215, 80);
  CHECK(ampere.channels == 14);
  CHECK(ampere.bw == doctest::Approx(15));
  // Under 25 GB/s a ring is not duplicated: one A100 NVLink, 1 x 20.
  const auto one_link = nccl_nvswitch_ring_search(nccl_nvlink_bw_per_link(80), 80);
  CHECK(one_link.channels == 1);
  CHECK(one_link.bw == doctest::Approx(20));
  // Slower than every speed: one ring at what there is.
  const auto slow = nccl_nvswitch_ring_search(2, 80);
  CHECK(slow.channels == 1);
  CHECK(slow.bw == doctest::Approx(2));
}

TEST_CASE("NCCL's NVLS graph on one node: one channel per GPU, so 2 or 4 GPUs of an H100 node run the ring")
{
  const double h100 = 18 * nccl_nvlink_bw_per_link(90);
  const auto g8 = nccl_nvls_graph_search(h100, 8, 90);  // 9 x 40 <= 370.8; bwInter raised 50, 60
  CHECK(g8.channels == 8);
  CHECK(g8.bw_intra == doctest::Approx(40));
  CHECK(g8.bw_inter == doctest::Approx(60));
  const auto g2 = nccl_nvls_graph_search(h100, 2, 90);
  CHECK(g2.channels == 2);
  CHECK(g2.bw_intra == doctest::Approx(60));
  CHECK(g2.bw_inter == doctest::Approx(60));
  const auto b200 = nccl_nvls_graph_search(18 * nccl_nvlink_bw_per_link(100), 8, 100);  // 9 x 80 <= 721.8
  CHECK(b200.bw_intra == doctest::Approx(80));
  CHECK(b200.bw_inter == doctest::Approx(90));
  // tuning.cc: busBw = nChannels x min(bwIntra x nvlsEfficiency x (nc - 1) / nc x 2, bwInter) for AllReduce:
  // 8 GPUs 476 GB/s (NVLS beats the ring's 360), 4 GPUs 240, 2 GPUs 102 (the ring wins).
  NcclSystem s;
  s.nodes = 1;
  s.compute_capability = 90;
  s.channels = 12;
  s.bw_intra = s.bw_inter = s.tree_bw_intra = 30;
  s.nvls = true;
  struct Case {
    int ppn;
    double bus;
    NcclAlgo algo;
  };
  for (const Case& c : {Case{8, 476.0, NcclAlgo::Nvls}, Case{4, 240.0, NcclAlgo::Ring}, Case{2, 102.0, NcclAlgo::Ring}}) {
    const int ppn = c.ppn;
    const double bus = c.bus;
    const NcclAlgo algo = c.algo;
    CAPTURE(ppn);
    s.ranks = ppn;
    const auto g = nccl_nvls_graph_search(h100, ppn, 90);
    s.nvls_graph_channels = g.channels;
    s.nvls_bw_intra = g.bw_intra;
    s.nvls_bw_inter = g.bw_inter;
    CHECK(nccl_bus_bw(CollectiveOp::AllReduce, NcclAlgo::Nvls, NcclProto::Simple, s) == doctest::Approx(bus));
    CHECK(nccl_choose(CollectiveOp::AllReduce, s, 1e9).algo == algo);
  }
}
