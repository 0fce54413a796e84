// Causality of the collectives' expansions: every transfer leaves its rank only after that rank
// joined, each rank's steps run in order, and a rank is done only after every rank it depends on
// joined (an AllReduce waits for all of them). Checked on contention-free schedules with skewed
// joins for every algorithm, and on SimGrid runs: one collective with a straggler, and a whole DDP
// training run with step-time jitter.
#include "sim/collectives/collective_options.hpp"
#include "sim/engine/causality.hpp"
#include "sim/engine/engine.hpp"
#include "sim/predict/predict.hpp"
#include "sim/topology/topology_builder.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>

using namespace dtsim;

namespace {

struct Case {
  const char* topology;
  int nodes;
  CollectiveOp op;
  NcclAlgo algo;
  NcclProto proto;
  double bytes;
};

struct Built {
  TaskGraph graph;
  std::vector<int> joins;  ///< per rank: the task it joins after
  CollectiveTasks tasks;
};

/// Rank r joins after a delay of skew(r) seconds: a scrambled order, so that no rank's neighbours
/// join in rank order.
double skew(int r) { return 1e-3 * static_cast<double>((r * 7919) % 37); }

Built build(const Topology& t, const Case& c)
{
  Built b;
  const std::vector<int> ranks = t.gpus();
  std::vector<std::vector<int>> start;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    b.joins.push_back(b.graph.add_delay(ranks[r], skew(static_cast<int>(r)), fmt::format("rank {} ready", r), TaskCategory::None));
    start.push_back({b.joins.back()});
  }
  CollectiveOptions o;
  o.filter.algos = {c.algo};
  o.filter.protos = {c.proto};
  b.tasks = add_collective(b.graph, t, {c.op, ranks, c.bytes, 0, "c", TaskCategory::AllReduce}, start, o);
  return b;
}

void check(const Built& b, const std::vector<Span>& spans, bool waits_for_all)
{
  const CausalityReport report = check_causality(b.graph, spans);
  for (const auto& e : report.examples)
    MESSAGE(e);
  CHECK(report.ok());
  CHECK(report.transfers_checked > 0);
  if (!waits_for_all)
    return;
  double last_join = 0;
  for (int j : b.joins)
    last_join = std::max(last_join, spans[static_cast<std::size_t>(j)].end);
  for (int d : b.tasks.done)
    CHECK(spans[static_cast<std::size_t>(d)].end >= last_join);
}

}  // namespace

TEST_CASE("every expansion is causal under skewed joins (contention-free schedule)")
{
  const Case cases[] = {
      {"dgx1-v100", 4, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 64e6},  // 32 ranks: merged steps
      {"dgx1-v100", 1, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::LL128, 8e6},
      {"dgx1-v100", 4, CollectiveOp::AllGather, NcclAlgo::Ring, NcclProto::Simple, 64e6},
      {"dgx1-v100", 4, CollectiveOp::ReduceScatter, NcclAlgo::Ring, NcclProto::Simple, 64e6},
      {"hgx-h100", 4, CollectiveOp::AllReduce, NcclAlgo::Tree, NcclProto::Simple, 64e6},
      {"hgx-h100", 1, CollectiveOp::AllReduce, NcclAlgo::Nvls, NcclProto::Simple, 64e6},
      {"hgx-h100", 2, CollectiveOp::AllReduce, NcclAlgo::NvlsTree, NcclProto::Simple, 64e6},
      {"dgx1-v100", 2, CollectiveOp::Broadcast, NcclAlgo::Ring, NcclProto::Simple, 64e6},
      {"dgx1-v100", 2, CollectiveOp::Reduce, NcclAlgo::Ring, NcclProto::Simple, 64e6},
      {"dgx1-v100", 2, CollectiveOp::AllToAll, NcclAlgo::Ring, NcclProto::Simple, 64e6},
  };
  for (const Case& c : cases) {
    CAPTURE(c.topology);
    CAPTURE(c.nodes);
    CAPTURE(to_string(c.op));
    CAPTURE(to_string(c.algo));
    const Topology t = load_topology(c.topology, c.nodes);
    const Built b = build(t, c);
    const auto spans = earliest_schedule(b.graph, [&](int id) {
      const Task& task = b.graph[id];
      return task.kind == TaskKind::Transfer ? task.bytes / 10e9 : task.seconds;
    });
    const bool all = c.op == CollectiveOp::AllReduce || c.op == CollectiveOp::AllGather;
    check(b, spans, all);
  }
}

TEST_CASE("a straggler holds every rank of a 32-rank ring AllReduce (SimGrid)")
{
  const Topology t = load_topology("dgx1-v100", 4);
  const Built b = build(t, {"dgx1-v100", 4, CollectiveOp::AllReduce, NcclAlgo::Ring, NcclProto::Simple, 100e6});
  const auto spans = simulate(t, b.graph);
  check(b, spans, true);
}

TEST_CASE("a DDP run with step-time jitter is causal (SimGrid)")
{
  const nlohmann::json doc = {
      {"cluster", {{"base", "dgx1-v100"}, {"nodes", 2}}},
      {"model", "resnet50"},
      {"training",
       {{"dataset_samples", 1281167}, {"batch_per_gpu", 64}, {"epochs", 1}, {"precision", "amp"},
        {"compute", {{"single_gpu_throughput", 1200}, {"jitter_cv", 0.1}}}}},
      {"strategy", {{"kind", "ddp"}}},
      {"gpus", 16},
      {"simulation", {{"iterations", 2}, {"warmup", 1}}}};
  const Prediction p = predict(parse_scenario(doc, "causality.json"));
  const CausalityReport report = check_causality(p.plan.graph, p.spans);
  for (const auto& e : report.examples)
    MESSAGE(e);
  CHECK(report.ok());
  CHECK(report.transfers_checked > 1000);
}
