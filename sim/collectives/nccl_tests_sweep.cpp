#include "sim/collectives/nccl_tests_sweep.hpp"

#include "sim/engine/collective_replay.hpp"
#include "sim/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

std::optional<CollectiveOp> parse_collective_op(const std::string& name)
{
  for (auto op : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::Broadcast,
                  CollectiveOp::Reduce, CollectiveOp::Gather, CollectiveOp::Scatter, CollectiveOp::AllToAll,
                  CollectiveOp::SendRecv})
    if (name == to_string(op))
      return op;
  return std::nullopt;
}

int usual_gpus_per_thread(const Topology& topology)
{
  return topology.nodes > 1 ? 1 : std::max(1, static_cast<int>(topology.gpus().size()));
}

std::vector<NcclTestsPoint> simulate_nccl_tests_sweep(const Topology& topology, CollectiveOp op,
                                                      const std::vector<std::uint64_t>& sizes,
                                                      const CollectiveOptions& options, int root, int element_bytes)
{
  const auto& ranks = topology.gpus();
  const int n = static_cast<int>(ranks.size());
  // Sizes run one after the other in one task graph, simulated in batches of about kBatchTasks
  // tasks (each a few SimGrid runs, see run_batch), which bounds the memory the graph takes.
  constexpr int kBatchTasks = 100000;
  std::vector<NcclTestsPoint> points;
  TaskGraph graph;
  std::vector<int> barrier;               // the join marking the end of the previous size
  std::vector<std::pair<int, int>> ends;  // per size in this batch: (begin marker, end marker)
  std::size_t first_in_batch = 0;
  auto run_batch = [&] {
    if (ends.empty())
      return;
    // Every size starts once the one before has ended, all ranks at once: exactly the isolated
    // run of the replay (collective_replay.hpp), which folds each by its symmetry where it has one.
    ReplayedRun replayed = simulate_with_replayed_collectives(topology, graph);
    const auto spans = replayed.applied ? std::move(replayed.spans) : simulate(topology, graph);
    for (std::size_t i = 0; i < ends.size(); ++i)
      points[first_in_batch + i].time_us = (spans[static_cast<std::size_t>(ends[i].second)].end -
                                            spans[static_cast<std::size_t>(ends[i].first)].end) * 1e6;
    graph = TaskGraph();
    barrier.clear();
    ends.clear();
    first_in_batch = points.size();
  };
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    NcclTestsPoint p;
    p.size = nccl_tests_size(to_string(op), sizes[i], n, element_bytes);
    CollectiveCall call;
    call.op = op;
    call.ranks = ranks;
    call.bytes = static_cast<double>(p.size.bytes);
    call.root = root;
    call.label = fmt::format("{}B", p.size.bytes);
    call.category = category_of(op);
    graph.set_group(static_cast<int>(i));
    const int before = graph.add_delay(ranks[0], 0.0, fmt::format("size {} begins", p.size.bytes), TaskCategory::Marker, barrier);
    std::vector<std::vector<int>> start(static_cast<std::size_t>(n), std::vector<int>{before});
    const auto tasks = add_collective(graph, topology, call, start, options);
    p.algorithm = tasks.algorithm;
    p.model_us = tasks.predicted_us;
    barrier = {graph.add_delay(ranks[0], 0.0, fmt::format("size {} ends", p.size.bytes), TaskCategory::Marker, tasks.done)};
    ends.emplace_back(before, barrier[0]);
    points.push_back(p);
    if (graph.size() >= kBatchTasks)
      run_batch();
  }
  run_batch();
  return points;
}

}  // namespace dtsim
