// The expansion memo (expansion_memo.hpp): a collective copied from an earlier identical call is the
// same graph, task for task, as expanding it again; a call that differs in anything the expansion
// reads is expanded anew; a whole DDP plan built with the memo equals the plan built without; and a
// copy whose ranks wait on as many tasks as the original's is marked as its copy (the replay then
// takes its run without comparing tasks), with the same spans as when the replay finds it alike.
#include "sim/collectives/collective_options.hpp"
#include "sim/collectives/expansion_memo.hpp"
#include "sim/engine/collective_replay.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/topology/topology_builder.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <stdexcept>

using namespace dtsim;

namespace {

void require_same_graph(const TaskGraph& a, const TaskGraph& b)
{
  REQUIRE(a.size() == b.size());
  for (int id = 0; id < a.size(); ++id) {
    const Task& x = a[id];
    const Task& y = b[id];
    INFO("task ", id, " '", x.name, "'");
    REQUIRE(x.kind == y.kind);
    REQUIRE(x.name == y.name);
    REQUIRE(x.category == y.category);
    REQUIRE(x.device == y.device);
    REQUIRE(x.seconds == y.seconds);
    REQUIRE(x.src == y.src);
    REQUIRE(x.dst == y.dst);
    REQUIRE(x.bytes == y.bytes);
    REQUIRE(x.rate_cap == y.rate_cap);
    REQUIRE(x.link_latency == y.link_latency);
    REQUIRE(x.sender_joined == y.sender_joined);
    REQUIRE(x.iteration == y.iteration);
    REQUIRE(x.group == y.group);
    REQUIRE(x.after == y.after);
  }
  REQUIRE(a.collectives().size() == b.collectives().size());
  for (std::size_t k = 0; k < a.collectives().size(); ++k) {
    REQUIRE(a.collectives()[k].first == b.collectives()[k].first);
    REQUIRE(a.collectives()[k].end == b.collectives()[k].end);
    REQUIRE(a.collectives()[k].done == b.collectives()[k].done);
  }
}

struct Case {
  const char* topology;
  int nodes;
  CollectiveOp op;
  NcclAlgo algo;
  NcclProto proto;
  double bytes;
};

/// Three calls in a row, each rank's part waiting on its own result of the call before and on a
/// per-rank delay; the second call repeats the first, the third differs from it in `change`.
TaskGraph three_calls(const Topology& t, const Case& c, ExpansionMemo* memo, int change)
{
  TaskGraph g;
  const std::vector<int> ranks = t.gpus();
  CollectiveOptions o;
  o.filter.algos = {c.algo};
  o.filter.protos = {c.proto};
  o.memo = memo;
  std::vector<int> previous(ranks.size(), -1);
  for (int call = 0; call < 3; ++call) {
    g.set_iteration(call);
    std::vector<std::vector<int>> start(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      start[r].push_back(g.add_delay(ranks[r], 1e-4 * static_cast<double>((r * 7 + static_cast<std::size_t>(call)) % 5),
                                     fmt::format("rank {} ready", r), TaskCategory::None));
      if (previous[r] >= 0)
        start[r].push_back(previous[r]);
    }
    CollectiveCall what{c.op, ranks, c.bytes, 0, "c", TaskCategory::AllReduce};
    if (call == 2) {
      if (change == 0)
        what.bytes *= 2;
      else if (change == 1)
        what.label = "d";
      else if (change == 2)
        g.set_group(7);
      else
        o.gpus_per_thread = 8;
    }
    const int before = g.size();
    const std::size_t collectives = g.collectives().size();
    const CollectiveTasks tasks = add_collective(g, t, what, start, o);
    REQUIRE(g.collectives().size() == collectives + 1);
    REQUIRE(g.collectives().back().first == before);
    previous = tasks.done;
  }
  return g;
}

}  // namespace

TEST_CASE("a copied expansion is the expansion, and a changed call is expanded anew")
{
  const Case cases[] = {
      {"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 64e6},
      {"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::LL128, 8e6},
      {"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::NvlsTree, NcclProto::Simple, 64e6},
      {"hgx-h100", 1, CollectiveOp::AllReduce, NcclAlgo::Nvls, NcclProto::Simple, 64e6},
      {"hgx-h100", 2, CollectiveOp::Broadcast, NcclAlgo::Ring, NcclProto::LL, 2e5},
      {"dgx1-v100", 1, CollectiveOp::AllGather, NcclAlgo::Ring, NcclProto::LL128, 16e6},
      {"dgx-a100", 2, CollectiveOp::AllToAll, NcclAlgo::Ring, NcclProto::Simple, 16e6},
  };
  for (const Case& c : cases) {
    const Topology t = load_topology(c.topology, c.nodes);
    for (int change = 0; change < 4; ++change) {
      INFO(c.topology, " x", c.nodes, " ", to_string(c.op), " ", to_string(c.algo), "/", to_string(c.proto), " change ",
           change);
      const TaskGraph fresh = three_calls(t, c, nullptr, change);
      ExpansionMemo memo;
      const TaskGraph memoised = three_calls(t, c, &memo, change);
      CHECK(memo.copies() == 1);  // the second call only
      require_same_graph(fresh, memoised);
    }
  }
}

TEST_CASE("a DDP plan built with the memo is the plan built without it")
{
  const nlohmann::json doc = {
      {"cluster", {{"base", "hgx-h100"}, {"nodes", 2}}},
      {"model", "resnet50"},
      {"training",
       {{"dataset_samples", 1281167}, {"batch_per_gpu", 256}, {"epochs", 1}, {"precision", "amp"},
        {"compute", {{"single_gpu_throughput", 3000}}}, {"loader", {{"workers", 4}}}}},
      {"strategy", {{"kind", "ddp"}, {"gradient_accumulation", 2}}},
      {"gpus", 16}};
  const Scenario s = parse_scenario(doc, "test.json");
  const Topology t = build_topology(s.cluster());
  const Model model = load_model(s.model, s.file, "/model");
  ExpansionMemo memo;
  CollectiveOptions with;
  with.memo = &memo;
  const Plan fresh = build_ddp_plan(s, t, model, 4, 1);
  const Plan memoised = build_ddp_plan(s, t, model, 4, 1, with);
  REQUIRE(fresh.graph.collectives().size() >= 4 * 5);
  CHECK(memo.copies() == static_cast<int>(fresh.graph.collectives().size()) - 7);  // parameters, buffers, 5 buckets
  require_same_graph(fresh.graph, memoised.graph);
}

TEST_CASE("a copy whose ranks wait on as many tasks as the original's is marked as its copy, and replays as it")
{
  const Topology t = load_topology("hgx-h100", 2);
  const std::vector<int> ranks = t.gpus();
  auto two_calls = [&](ExpansionMemo* memo, int extra_wait) {
    TaskGraph g;
    CollectiveOptions o;
    o.filter.algos = {NcclAlgo::Tree};
    o.filter.protos = {NcclProto::LL128};
    o.memo = memo;
    std::vector<int> previous(ranks.size(), -1);
    for (int call = 0; call < 2; ++call) {
      g.set_iteration(call);
      std::vector<std::vector<int>> start(ranks.size());
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        start[r].push_back(g.add_compute(ranks[r], 1e-4 * static_cast<double>(1 + (r * 3 + static_cast<std::size_t>(call)) % 4),
                                         fmt::format("rank {} backward", r), TaskCategory::Backward,
                                         previous[r] >= 0 ? std::vector<int>{previous[r]} : std::vector<int>{}));
        if (call == 1 && extra_wait)
          start[r].push_back(previous[r]);
      }
      previous = add_collective(g, t, {CollectiveOp::AllReduce, ranks, 8e6, 0, "c", TaskCategory::AllReduce}, start, o).done;
    }
    return g;
  };
  ExpansionMemo memo;
  const TaskGraph copied = two_calls(&memo, 0);
  REQUIRE(copied.collectives().size() == 2);
  CHECK(memo.copies() == 1);
  CHECK(copied.collectives()[0].copy_of == -1);
  CHECK(copied.collectives()[1].copy_of == 0);
  ExpansionMemo other;
  CHECK(two_calls(&other, 1).collectives()[1].copy_of == -1);  // its ranks wait on two tasks each

  // The replay takes the copy's runs from the original's, as it finds them without the mark.
  const TaskGraph fresh = two_calls(nullptr, 0);
  CHECK(fresh.collectives()[1].copy_of == -1);
  const ReplayedRun a = simulate_with_replayed_collectives(t, copied);
  const ReplayedRun b = simulate_with_replayed_collectives(t, fresh);
  REQUIRE(a.applied);
  REQUIRE(b.applied);
  CHECK(a.distinct == 1);
  CHECK(b.distinct == 1);
  REQUIRE(a.spans.size() == b.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    CHECK(a.spans[i].start == b.spans[i].start);
    CHECK(a.spans[i].end == b.spans[i].end);
  }
}

TEST_CASE("a collective cannot be marked as the copy of one that is not there")
{
  TaskGraph g;
  const int a = g.add_delay(0, 1.0, "a", TaskCategory::None);
  g.mark_collective(a, {a});
  const int b = g.add_delay(0, 1.0, "b", TaskCategory::None);
  CHECK_THROWS_AS(g.mark_collective(b, {b}, 5), std::logic_error);
  CHECK_NOTHROW(g.mark_collective(b, {b}, a));
  CHECK(g.collectives()[1].copy_of == 0);
}
