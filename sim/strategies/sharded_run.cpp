// See sharded_run.hpp.
#include "sim/strategies/sharded_run.hpp"

#include "sim/strategies/task_util.hpp"

#include <fmt/format.h>

namespace dtsim {

ShardedRun::ShardedRun(Plan& plan, const Topology& topology, const CollectiveOptions& collectives)
    : plan_(plan), topology_(topology), options_(collectives)
{
  const auto n = plan.ranks.size();
  compute_.assign(n, -1);
  compute_waits_.assign(n, {});
  for (int s = 0; s < 2; ++s) {
    stream_[s].assign(n, -1);
    stream_waits_[s].assign(n, {});
  }
}

void ShardedRun::start_all(int task)
{
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    compute_[r] = task;
    stream_[0][r] = stream_[1][r] = task;
  }
}

void ShardedRun::add_loaders(const LoaderSpec& loader, const std::vector<std::vector<int>>& ranks_per_loader)
{
  loader_ = &loader;
  lane_ranks_ = ranks_per_loader;
  for (const auto& ranks : ranks_per_loader) {
    const int dev = plan_.ranks[static_cast<std::size_t>(ranks.front())];
    const int cpu = host_cpu_of(topology_, dev);
    lanes_.emplace_back(loader, cpu >= 0 ? cpu : dev, fmt::format("rank {}'s DataLoader", ranks.front()));
  }
}

void ShardedRun::load_inputs(double samples)
{
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    const int loaded = lanes_[l].load(plan_.graph, samples, compute_last(lane_ranks_[l].front()));
    if (loaded < 0)
      continue;
    for (const int r : lane_ranks_[l]) {
      const auto ri = static_cast<std::size_t>(r);
      const int copy = add_input_copy(plan_.graph, topology_, *loader_, plan_.ranks[ri], samples, deps({compute_[ri], loaded}),
                                      fmt::format("input batch host -> rank {}", r));
      compute_[ri] = copy >= 0 ? copy : loaded;
    }
  }
}

std::vector<int> ShardedRun::compute_last(int r) const
{
  std::vector<int> out = compute_waits_[static_cast<std::size_t>(r)];
  out.push_back(compute_[static_cast<std::size_t>(r)]);
  return deps(out);
}

std::vector<int> ShardedRun::compute_last_all()
{
  std::vector<int> out(compute_.size());
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    if (!compute_waits_[r].empty()) {
      compute_[r] = plan_.graph.add_delay(plan_.ranks[r], 0.0, "wait", "marker", compute_last(static_cast<int>(r)));
      compute_waits_[r].clear();
    }
    out[r] = compute_[r];
  }
  return out;
}

void ShardedRun::wait_for(const std::vector<int>& per_rank)
{
  for (std::size_t r = 0; r < compute_.size() && r < per_rank.size(); ++r)
    if (per_rank[r] >= 0)
      compute_waits_[r].push_back(per_rank[r]);
}

void ShardedRun::compute_all(double seconds, const std::string& name, const std::string& category)
{
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    compute_[r] = plan_.graph.add_compute(plan_.ranks[r], seconds, fmt::format("{} (rank {})", name, r), category,
                                          compute_last(static_cast<int>(r)));
    compute_waits_[r].clear();
  }
}

void ShardedRun::pieces(const std::vector<StagePiece>& list, bool backward, const std::vector<std::vector<int>>& tp_groups,
                        const std::string& where)
{
  const auto tp = [&](const std::vector<TpCollective>& collectives, const char* what) {
    for (const auto& c : collectives) {
      std::vector<std::vector<int>> start(compute_.size());
      for (std::size_t r = 0; r < compute_.size(); ++r)
        start[r] = compute_last(static_cast<int>(r));
      for (const auto& group : tp_groups) {
        CollectiveCall call{c.op, {}, c.bytes, 0, fmt::format("tp {} {}", what, where), "tensor-parallel"};
        std::vector<std::vector<int>> after;
        for (int r : group) {
          call.ranks.push_back(plan_.ranks[static_cast<std::size_t>(r)]);
          after.push_back(start[static_cast<std::size_t>(r)]);
        }
        const auto done = add_collective(plan_.graph, topology_, call, after, options_).done;
        for (std::size_t i = 0; i < group.size(); ++i) {
          const auto r = static_cast<std::size_t>(group[i]);
          compute_[r] = done[i];
          compute_waits_[r].clear();
        }
      }
    }
  };
  const auto n = list.size();
  for (std::size_t k = 0; k < n; ++k) {
    const StagePiece& piece = list[backward ? n - 1 - k : k];
    const std::string at = piece.name.empty() ? where : piece.name;
    if (backward && piece.recompute_s > 0) {
      compute_all(piece.recompute_s, "recompute " + at, "recompute");
      if (piece.recompute_collectives)
        tp(piece.after_fwd, "recompute");
    }
    compute_all(backward ? piece.bwd_s : piece.fwd_s, (backward ? "backward " : "forward ") + at, backward ? "backward" : "forward");
    tp(backward ? piece.after_bwd : piece.after_fwd, backward ? "bwd" : "fwd");
  }
}

void ShardedRun::stream_waits_for_compute(Stream stream)
{
  const auto s = static_cast<int>(stream);
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    const auto c = compute_last(static_cast<int>(r));
    stream_waits_[s][r].insert(stream_waits_[s][r].end(), c.begin(), c.end());
  }
}

std::vector<int> ShardedRun::collective(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                                        const std::string& label, const std::string& category,
                                        std::vector<std::vector<int>> start, Stream stream)
{
  const auto s = static_cast<int>(stream);
  start.resize(compute_.size());
  std::vector<int> done(compute_.size(), -1);
  for (const auto& group : groups) {
    CollectiveCall call{op, {}, bytes, 0, label, category};
    std::vector<std::vector<int>> after;
    for (int r : group) {
      const auto ri = static_cast<std::size_t>(r);
      call.ranks.push_back(plan_.ranks[ri]);
      std::vector<int> d = start[ri];
      d.insert(d.end(), stream_waits_[s][ri].begin(), stream_waits_[s][ri].end());
      d.push_back(stream_[s][ri]);
      after.push_back(deps(d));
    }
    const auto tasks = add_collective(plan_.graph, topology_, call, after, options_);
    for (std::size_t i = 0; i < group.size(); ++i) {
      const auto ri = static_cast<std::size_t>(group[i]);
      done[ri] = stream_[s][ri] = tasks.done[i];
      stream_waits_[s][ri].clear();
    }
  }
  return done;
}

void ShardedRun::optimizer_step(double seconds)
{
  TaskGraph& g = plan_.graph;
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    std::vector<int> after = compute_last(static_cast<int>(r));
    after.push_back(stream_[0][r]);
    after.push_back(stream_[1][r]);
    const std::string name = fmt::format("optimizer step (rank {})", r);
    const int step = seconds > 0 ? g.add_compute(plan_.ranks[r], seconds, name, "optimizer", deps(after))
                                 : g.add_delay(plan_.ranks[r], 0.0, name, "optimizer", deps(after));
    compute_[r] = stream_[0][r] = stream_[1][r] = step;
    compute_waits_[r].clear();
    stream_waits_[0][r].clear();
    stream_waits_[1][r].clear();
  }
}

void ShardedRun::end_iteration(int iteration)
{
  std::vector<int> all;
  for (std::size_t r = 0; r < compute_.size(); ++r) {
    std::vector<int> after = compute_last(static_cast<int>(r));
    after.push_back(stream_[0][r]);
    after.push_back(stream_[1][r]);
    all.insert(all.end(), after.begin(), after.end());
  }
  plan_.iteration_end.push_back(
      plan_.graph.add_delay(plan_.ranks[0], 0.0, fmt::format("iteration {} done", iteration), "marker", deps(all)));
}

}  // namespace dtsim
