// The end of a parallel plan's iteration (parallel_build.hpp): data-parallel gradients per (stage,
// tensor rank), bucketed: AllReduced, or with the distributed optimizer reduce-scattered (each replica
// then updates 1/D of them and the parameters are all-gathered). Then the tied embedding's gradient
// between the first and last stage, then the optimizer (megatron/core/distributed/finalize_model_grads.py;
// optimizer/distrib_optimizer.py).
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/parallel_build.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/strategies/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

namespace {

/// One collective of (stage s, tensor rank t)'s replicas, each replica d < Dn after start[d]; folded,
/// every tensor rank's group of the stage at once.
void dp_collective(ParallelBuild& b, CollectiveOp op, int s, int t, double bytes, const std::string& name,
                   TaskCategory category, std::vector<std::vector<int>>& start)
{
  TaskGraph& g = b.plan.graph;
  const auto group_of = [&](int tensor_rank) {
    std::vector<int> group;
    for (int d = 0; d < b.D; ++d)
      group.push_back(b.dev(d, s, tensor_rank));
    return group;
  };
  if (b.fold) {
    std::vector<ClockedComm> set;
    for (int r = 0; r < b.T; ++r)
      set.push_back({CollectiveCall{op, group_of(r), bytes, 0, name, category}});
    start[0] = {b.folded->add(g, set, {{0, 0, b.dev(0, s, 0), start[0]}}, name, category)[0]};
    return;
  }
  const auto done = add_collective(g, b.topology, CollectiveCall{op, group_of(t), bytes, 0, name, category}, start, b.collectives).done;
  for (int d = 0; d < b.D; ++d)
    start[static_cast<std::size_t>(d)] = {done[static_cast<std::size_t>(d)]};
}

/// The data-parallel gradients of every (stage, tensor rank); returns synced[s][t][d], each simulated
/// replica's task after which they are reduced.
std::vector<std::vector<std::vector<int>>> sync_gradients(ParallelBuild& b)
{
  const int D = b.D, P = b.P, T = b.T, Dn = b.Dn, Tn = b.Tn;
  std::vector<std::vector<std::vector<int>>> synced(static_cast<std::size_t>(P),
                                                    std::vector<std::vector<int>>(static_cast<std::size_t>(T)));
  for (int s = 0; s < P; ++s) {
    const std::vector<double> buckets = D > 1 ? gradient_buckets(b, s) : std::vector<double>{};
    for (int t = 0; t < Tn; ++t) {
      std::vector<std::vector<int>> start;
      for (int d = 0; d < Dn; ++d)
        start.push_back({b.last[b.idx(d, s, t)]});
      for (std::size_t k = 0; k < buckets.size(); ++k)
        dp_collective(b, b.cfg.distributed_optimizer ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, s, t,
                      buckets[k], fmt::format("stage {} tp {} gradient bucket {}", s, t, k), TaskCategory::AllReduce, start);
      for (int d = 0; d < Dn; ++d)
        synced[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)].push_back(start[static_cast<std::size_t>(d)].front());
    }
  }
  return synced;
}

/// The tied embedding's gradient, AllReduced between the first and last stage of every replica and
/// tensor rank, after their data-parallel gradients.
void sync_embedding(ParallelBuild& b, std::vector<std::vector<std::vector<int>>>& synced)
{
  TaskGraph& g = b.plan.graph;
  const int D = b.D, P = b.P, T = b.T;
  for (int d = 0; d < b.Dn; ++d)
    for (int t = 0; t < b.Tn; ++t) {
      auto& first = synced.front()[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
      auto& last_stage = synced.back()[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
      const auto call_of = [&](int r, int tr) {
        return CollectiveCall{CollectiveOp::AllReduce, {b.dev(r, 0, tr), b.dev(r, P - 1, tr)}, b.embedding_params / T * b.grad_elem,
                              0, fmt::format("embedding gradients replica {} tp {}", r, tr), TaskCategory::EmbeddingGrad};
      };
      if (b.fold) {  // both ends are simulated: they join, every replica's and tensor rank's pair at once
        std::vector<ClockedComm> set;
        for (int r = 0; r < D; ++r)
          for (int tr = 0; tr < T; ++tr)
            set.push_back({call_of(r, tr)});
        const auto done = b.folded->add(g, set, {{0, 0, b.dev(0, 0, 0), {first}}, {0, 1, b.dev(0, P - 1, 0), {last_stage}}},
                                        set.front().call.label, TaskCategory::EmbeddingGrad);
        first = done[0];
        last_stage = done[1];
        continue;
      }
      const auto done = add_collective(g, b.topology, call_of(d, t), {{first}, {last_stage}}, b.collectives).done;
      first = done[0];
      last_stage = done[1];
    }
}

}  // namespace

void add_step_end(ParallelBuild& b, int it)
{
  TaskGraph& g = b.plan.graph;
  const int D = b.D, P = b.P, T = b.T, Dn = b.Dn, Tn = b.Tn;
  auto synced = sync_gradients(b);
  if (b.embedding_sync)
    sync_embedding(b, synced);
  std::vector<int> all;
  for (int s = 0; s < P; ++s) {
    const double shard = b.stage_params[static_cast<std::size_t>(s)] / T / (b.cfg.distributed_optimizer ? D : 1);
    const double step_s =
        !b.add_optimizer ? 0.0
        : b.roofline     ? optimizer_seconds(shard, b.mem, b.half_weights, b.topology.gpu, b.half_weights ? kMegatronStepPassBytes : 0,
                                             roofline_memory_efficiency(b.scenario.training.compute))
                         : optimizer_seconds(shard, b.mem, b.half_weights, b.topology.gpu);
    // The distributed optimizer gathers the parameters in the gradients' buckets, each of its parameters' bytes.
    const std::vector<double> gathers = D > 1 && b.cfg.distributed_optimizer ? gradient_buckets(b, s) : std::vector<double>{};
    for (int t = 0; t < Tn; ++t) {
      std::vector<std::vector<int>> start;
      for (int d = 0; d < Dn; ++d) {
        const int after = synced[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
        const auto name = fmt::format("optimizer step (stage {})", s);
        start.push_back({step_s > 0 ? g.add_compute(b.dev(d, s, t), step_s, name, TaskCategory::Optimizer, {after})
                                    : g.add_delay(b.dev(d, s, t), 0.0, name, TaskCategory::Optimizer, {after})});
      }
      for (std::size_t k = 0; k < gathers.size(); ++k)
        dp_collective(b, CollectiveOp::AllGather, s, t, gathers[k] * b.param_elem / b.grad_elem,
                      fmt::format("stage {} tp {} parameter bucket {}", s, t, k), TaskCategory::AllGather, start);
      for (int d = 0; d < Dn; ++d) {
        b.last[b.idx(d, s, t)] = start[static_cast<std::size_t>(d)].front();
        all.push_back(b.last[b.idx(d, s, t)]);
      }
    }
  }
  b.plan.iteration_end.push_back(
      g.add_delay(b.plan.ranks[0], 0.0, fmt::format("iteration {} done", it), TaskCategory::Marker, dtsim::deps(all)));
}

}  // namespace dtsim
