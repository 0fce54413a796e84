// The fold of a collective by its symmetry (collective_symmetry.hpp) is exact: an isolated collective
// run with one representative per orbit on folded links gives every task the span it has when every
// task runs, for every algorithm on the presets; and where the machine or the plan is not symmetric
// (a slower NIC, a communicator on part of each node, a rooted broadcast, DGX-1's cube mesh) nothing
// folds. A double binary tree folds by a rotation with the nodes mirrored. The expected reductions (tasks per task simulated) are what the fold gave when written.
#include "sim/collectives/collective_options.hpp"
#include "sim/engine/collective_replay.hpp"
#include "sim/engine/collective_symmetry.hpp"
#include "sim/topology/topology_builder.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace dtsim;

namespace {

struct Case {
  const char* topology;
  int nodes;
  CollectiveOp op;
  NcclAlgo algo;
  NcclProto proto;
  double reduction;  ///< the fold expected: at least this many tasks per task simulated
};

/// One collective on `ranks`, each rank joining after its own delay (skewed, so the replay's join
/// is the last of them), as a graph the replay recognises.
TaskGraph one_collective(const Topology& t, const std::vector<int>& ranks, const Case& c, double bytes)
{
  TaskGraph g;
  std::vector<std::vector<int>> start;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    start.push_back({g.add_delay(ranks[r], 1e-6 * static_cast<double>((r * 7) % 5), fmt::format("rank {} ready", r), TaskCategory::None)});
  CollectiveOptions o;
  o.filter.algos = {c.algo};
  o.filter.protos = {c.proto};
  add_collective(g, t, {c.op, ranks, bytes, 0, "c", TaskCategory::AllReduce}, start, o);
  return g;
}

/// Folded and unfolded replays of `g` on `t`: every task's span the same; returns the fold's report.
ReplayedRun check_fold_is_exact(const Topology& t, const TaskGraph& g)
{
  const ReplayedRun folded = simulate_with_replayed_collectives(t, g);
  const ReplayedRun whole = simulate_with_replayed_collectives(t, g, {.fold = false});
  REQUIRE(folded.applied);
  REQUIRE(whole.applied);
  CHECK(whole.folded == 0);
  CHECK(whole.isolated_tasks == whole.distinct_tasks);
  REQUIRE(folded.spans.size() == whole.spans.size());
  double worst = 0;
  for (std::size_t i = 0; i < whole.spans.size(); ++i) {
    const double scale = std::max(1e-9, std::abs(whole.spans[i].end));
    worst = std::max({worst, std::abs(folded.spans[i].end - whole.spans[i].end) / scale,
                      std::abs(folded.spans[i].start - whole.spans[i].start) / scale});
  }
  CHECK(worst < 1e-9);
  return folded;
}

}  // namespace

TEST_CASE("a folded collective runs as the whole one, task for task")
{
  const Case cases[] = {
      {"hgx-h100", 1, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 8},
      {"hgx-h100", 1, CollectiveOp::AllReduce, NcclAlgo::Nvls, NcclProto::Simple, 5},
      {"hgx-h100", 4, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 11},
      {"hgx-h100", 4, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::LL128, 11},
      // A tree and its mirror on alternate channels: rotation by 1 with the nodes mirrored on an even
      // node count (8 channels in one orbit); an odd count's second tree is shifted, not mirrored: by 2.
      {"hgx-h100", 4, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 8},
      {"hgx-h100", 3, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::LL, 4},
      {"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::NvlsTree, NcclProto::Simple, 7},
      {"hgx-h100", 4, CollectiveOp::AllGather, NcclAlgo::Ring, NcclProto::Simple, 13},
      {"hgx-h100", 4, CollectiveOp::ReduceScatter, NcclAlgo::Ring, NcclProto::Simple, 13},
      {"dgx-a100", 2, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 11},
      {"dgx-a100", 2, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 8},
      // Two of DGX SuperPOD's scalable units (20 + 4 nodes, rail leaves under a spine).
      // The mirror of 24 nodes maps unit 0's last node onto unit 1's first, so the tree turns by 2.
      {"dgx-a100", 24, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 15},
      {"dgx-a100", 24, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 4},
      {"dgx1-v100", 2, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 1},  // cube mesh: no rotation,
      {"dgx1-v100", 2, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 1},
      {"hgx-h100", 2, CollectiveOp::Broadcast, NcclAlgo::Ring, NcclProto::Simple, 1},  // rooted: no rotation
  };
  for (const Case& c : cases) {
    const std::string name = fmt::format("{} x {} {} {}/{}", c.nodes, c.topology, to_string(c.op), to_string(c.algo),
                                         to_string(c.proto));
    CAPTURE(name);
    const Topology t = load_topology(c.topology, c.nodes);
    const TaskGraph g = one_collective(t, t.gpus(), c, 48e6);
    const ReplayedRun folded = check_fold_is_exact(t, g);
    const CollectiveFold fold = fold_collective(t, g, g.collectives()[0]);
    CAPTURE(fold.why_not);
    CHECK(static_cast<double>(folded.distinct_tasks) >= c.reduction * static_cast<double>(folded.isolated_tasks));
    const CollectiveRange& range = g.collectives()[0];
    CHECK(folded.folded == (fold.representatives() < range.end - range.first ? 1 : 0));
    CHECK(fold.mirrored == (c.algo == NcclAlgo::Tree && c.nodes % 2 == 0 && fold.rotation == 1));
    MESSAGE(name, ": rotation ", fold.rotation, std::string(fold.mirrored ? " and mirror" : ""), ", largest orbit ", fold.largest_orbit, ", ", folded.isolated_tasks,
            " of ", folded.distinct_tasks, " tasks simulated", fold.why_not.empty() ? "" : " (" + fold.why_not + ")");
  }
}

TEST_CASE("no fold where the machine or the communicator is not symmetric")
{
  const Case tree{"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 1};
  SUBCASE("one NIC slower than the others")
  {
    Topology t = load_topology("hgx-h100", 2);
    const int nic = t.nics_of_node(1)[3];
    for (int l : t.links_of(nic))
      if (t.link(l).kind == LinkKind::Network)
        t.set_link_rate(l, t.link(l).bandwidth / 2, t.link(l).latency);
    const TaskGraph g = one_collective(t, t.gpus(), tree, 48e6);
    const CollectiveFold fold = fold_collective(t, g, g.collectives()[0]);
    CHECK(fold.rotation == 0);
    CHECK(fold.why_not.find("differ") != std::string::npos);
    CHECK(check_fold_is_exact(t, g).folded == 0);
  }
  SUBCASE("a rooted broadcast: turned down by who sends and receives, before any task's shape")
  {
    const Topology t = load_topology("hgx-h100", 2);
    const Case bcast{"hgx-h100", 2, CollectiveOp::Broadcast, NcclAlgo::Ring, NcclProto::Simple, 1};
    const TaskGraph g = one_collective(t, t.gpus(), bcast, 48e6);
    const CollectiveFold fold = fold_collective(t, g, g.collectives()[0]);
    CHECK(fold.rotation == 0);
    CAPTURE(fold.why_not);
    // The root (rank 0) only sends; every rotation moves it onto a GPU that receives.
    CHECK(fold.why_not.find(t.device(t.gpus()[0]).name + " only sends and its image") != std::string::npos);
    CHECK(check_fold_is_exact(t, g).folded == 0);
  }
  SUBCASE("four of each node's eight GPUs")
  {
    const Topology t = load_topology("hgx-h100", 2);
    std::vector<int> ranks;
    for (int node = 0; node < 2; ++node)
      for (int i = 0; i < 4; ++i)
        ranks.push_back(t.gpus_of_node(node)[static_cast<std::size_t>(i)]);
    const TaskGraph g = one_collective(t, ranks, tree, 48e6);
    CHECK(check_fold_is_exact(t, g).folded == 0);
  }
}

TEST_CASE("a fold carries over to a collective that differs in its byte counts alone")
{
  // Two AllReduces of one plan (DDP's buckets): the same tasks, other sizes.
  const Topology t = load_topology("hgx-h100", 4);
  const Case tree{"hgx-h100", 4, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::LL128, 1};
  TaskGraph g;
  std::vector<std::vector<int>> start;
  for (int r : t.gpus())
    start.push_back({g.add_delay(r, 0, fmt::format("rank {} ready", r), TaskCategory::None)});
  CollectiveOptions o;
  o.filter.algos = {tree.algo};
  o.filter.protos = {tree.proto};
  add_collective(g, t, {tree.op, t.gpus(), 25e6, 0, "bucket 0", TaskCategory::AllReduce}, start, o);
  add_collective(g, t, {tree.op, t.gpus(), 24e6, 0, "bucket 1", TaskCategory::AllReduce}, start, o);
  REQUIRE(g.collectives().size() == 2);
  const CollectiveRange& a = g.collectives()[0];
  const CollectiveRange& b = g.collectives()[1];
  REQUIRE(a.end - a.first == b.end - b.first);
  int transfer = a.first;
  while (g[transfer].kind != TaskKind::Transfer)
    ++transfer;
  REQUIRE(g[transfer].bytes != g[transfer - a.first + b.first].bytes);
  CHECK(fold_carries_over(g, a, b));
  const CollectiveFold fa = fold_collective(t, g, a), fb = fold_collective(t, g, b);
  CHECK(fa.rotation > 0);
  CHECK(fa.rotation == fb.rotation);
  CHECK(fa.mirrored == fb.mirrored);
  CHECK(fa.representative == fb.representative);
  REQUIRE(fa.links.size() == fb.links.size());
  for (const auto& [key, link] : fa.links) {
    REQUIRE(fb.links.count(key) == 1);
    CHECK(fb.links.at(key).key == link.key);
    CHECK(fb.links.at(key).flows == link.flows);
  }
  SUBCASE("one transfer's bytes differ from those its counterpart's equals have")
  {
    TaskGraph h = g;
    const CollectiveRange& hb = h.collectives()[1];
    for (int id = hb.first; id < hb.end; ++id)
      if (h[id].kind == TaskKind::Transfer) {
        h[id].bytes *= 1.5;
        break;
      }
    CHECK_FALSE(fold_carries_over(h, h.collectives()[0], hb));
  }
  SUBCASE("one dependency differs")
  {
    TaskGraph h = g;
    const CollectiveRange& hb = h.collectives()[1];
    for (int id = hb.first + 1; id < hb.end; ++id)
      if (!h[id].after.empty() && h[id].after[0] >= hb.first) {
        h[id].after[0] = h[id].after[0] == hb.first ? hb.first + 1 : hb.first;
        break;
      }
    CHECK_FALSE(fold_carries_over(h, h.collectives()[0], hb));
  }
}
