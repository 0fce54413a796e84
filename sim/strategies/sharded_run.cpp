// See sharded_run.hpp.
#include "sim/strategies/sharded_run.hpp"

#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/task_util.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

ShardedRun::ShardedRun(Plan& plan, const Topology& topology, const CollectiveOptions& collectives)
    : plan_(plan), topology_(topology), options_(collectives)
{
  const auto n = plan.ranks.size();
  if (collectives.fold_ranks && n > 1) {
    folded_.emplace(topology, collectives);
    active_ = {0};
  } else {
    for (std::size_t r = 0; r < n; ++r)
      active_.push_back(static_cast<int>(r));
  }
  compute_.assign(n, -1);
  compute_waits_.assign(n, {});
  for (int s = 0; s < kStreams; ++s) {
    stream_[s].assign(n, -1);
    stream_waits_[s].assign(n, {});
  }
}

std::vector<FoldedComms::Member> ShardedRun::members(const std::vector<std::vector<int>>& groups,
                                                     const std::vector<std::vector<int>>& after) const
{
  std::vector<FoldedComms::Member> out;
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (std::size_t p = 0; p < groups[gi].size(); ++p) {
      const int r = groups[gi][p];
      if (std::find(active_.begin(), active_.end(), r) != active_.end())
        out.push_back({static_cast<int>(gi), static_cast<int>(p), plan_.ranks[static_cast<std::size_t>(r)],
                       after[static_cast<std::size_t>(r)]});
    }
  return out;
}

void ShardedRun::start_all(int task)
{
  for (const int r : active_) {
    compute_[static_cast<std::size_t>(r)] = task;
    for (auto& stream : stream_)
      stream[static_cast<std::size_t>(r)] = task;
  }
}

void ShardedRun::add_loaders(const LoaderSpec& loader, const std::vector<std::vector<int>>& ranks_per_loader)
{
  loader_ = &loader;
  for (const auto& all : ranks_per_loader) {
    std::vector<int> ranks;
    for (const int r : all)
      if (std::find(active_.begin(), active_.end(), r) != active_.end())
        ranks.push_back(r);
    if (ranks.empty())
      continue;
    lane_ranks_.push_back(ranks);
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
  std::vector<int> out(compute_.size(), -1);
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    if (!compute_waits_[r].empty()) {
      compute_[r] = plan_.graph.add_delay(plan_.ranks[r], 0.0, "wait", TaskCategory::Marker, compute_last(static_cast<int>(r)));
      compute_waits_[r].clear();
    }
    out[r] = compute_[r];
  }
  return out;
}

void ShardedRun::append_each(std::vector<std::vector<int>>& waits, const std::vector<int>& per_rank) const
{
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    if (r < per_rank.size() && per_rank[r] >= 0)
      waits[r].push_back(per_rank[r]);
  }
}

void ShardedRun::wait_for(const std::vector<int>& per_rank)
{
  append_each(compute_waits_, per_rank);
}

std::vector<std::vector<int>> ShardedRun::starts_after(const std::vector<int>& per_rank) const
{
  std::vector<std::vector<int>> start(compute_.size());
  append_each(start, per_rank);
  return start;
}

void ShardedRun::wait_for_streams()
{
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    for (const auto& stream : stream_)
      compute_waits_[r].push_back(stream[r]);
  }
}

void ShardedRun::compute_all(double seconds, const std::string& name, TaskCategory category)
{
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
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
      for (const int r : active_)
        start[static_cast<std::size_t>(r)] = compute_last(r);
      if (folded_) {
        std::vector<ClockedComm> set;
        for (const auto& group : tp_groups) {
          CollectiveCall call{c.op, {}, c.bytes, 0, fmt::format("tp {} {}", what, where), TaskCategory::TensorParallel};
          for (int r : group)
            call.ranks.push_back(plan_.ranks[static_cast<std::size_t>(r)]);
          set.push_back({call});
        }
        const auto who = members(tp_groups, start);
        const auto done = folded_->add(plan_.graph, set, who, set.front().call.label, TaskCategory::TensorParallel);
        for (std::size_t k = 0; k < who.size(); ++k) {
          const auto r = static_cast<std::size_t>(tp_groups[static_cast<std::size_t>(who[k].item)][static_cast<std::size_t>(who[k].position)]);
          compute_[r] = done[k];
          compute_waits_[r].clear();
        }
        continue;
      }
      for (const auto& group : tp_groups) {
        CollectiveCall call{c.op, {}, c.bytes, 0, fmt::format("tp {} {}", what, where), TaskCategory::TensorParallel};
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
      compute_all(piece.recompute_s, "recompute " + at, TaskCategory::Recompute);
      if (piece.recompute_collectives)
        tp(piece.after_fwd, "recompute");
    }
    compute_all(backward ? piece.bwd_s : piece.fwd_s, (backward ? "backward " : "forward ") + at, backward ? TaskCategory::Backward : TaskCategory::Forward);
    tp(backward ? piece.after_bwd : piece.after_fwd, backward ? "bwd" : "fwd");
  }
}

void ShardedRun::stream_waits_for_compute(Stream stream)
{
  const auto s = static_cast<int>(stream);
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    const auto c = compute_last(a);
    stream_waits_[s][r].insert(stream_waits_[s][r].end(), c.begin(), c.end());
  }
}

std::vector<int> ShardedRun::collective(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                                        const std::string& label, TaskCategory category,
                                        std::vector<std::vector<int>> start, Stream stream, int root)
{
  const auto s = static_cast<int>(stream);
  start.resize(compute_.size());
  std::vector<int> done(compute_.size(), -1);
  if (folded_) {
    std::vector<ClockedComm> set;
    for (const auto& group : groups) {
      CollectiveCall call{op, {}, bytes, root, label, category};
      for (int r : group)
        call.ranks.push_back(plan_.ranks[static_cast<std::size_t>(r)]);
      set.push_back({call});
    }
    for (const int a : active_) {
      const auto ri = static_cast<std::size_t>(a);
      start[ri].insert(start[ri].end(), stream_waits_[s][ri].begin(), stream_waits_[s][ri].end());
      start[ri].push_back(stream_[s][ri]);
    }
    const auto who = members(groups, start);
    if (who.empty())
      return done;
    const auto tasks = folded_->add(plan_.graph, set, who, label, category);
    for (std::size_t k = 0; k < who.size(); ++k) {
      const auto ri = static_cast<std::size_t>(groups[static_cast<std::size_t>(who[k].item)][static_cast<std::size_t>(who[k].position)]);
      done[ri] = stream_[s][ri] = tasks[k];
      stream_waits_[s][ri].clear();
    }
    return done;
  }
  for (const auto& group : groups) {
    CollectiveCall call{op, {}, bytes, root, label, category};
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

std::vector<int> ShardedRun::stream_delay(Stream stream, double seconds, const std::string& label, TaskCategory category,
                                          std::vector<std::vector<int>> start)
{
  return stream_task(false, stream, seconds, label, category, std::move(start));
}

std::vector<int> ShardedRun::stream_kernel(Stream stream, double seconds, const std::string& label, TaskCategory category,
                                           std::vector<std::vector<int>> start)
{
  return stream_task(true, stream, seconds, label, category, std::move(start));
}

void ShardedRun::stream_waits_for(Stream stream, const std::vector<int>& per_rank)
{
  append_each(stream_waits_[static_cast<int>(stream)], per_rank);
}

std::vector<int> ShardedRun::stream_task(bool kernel, Stream stream, double seconds, const std::string& label,
                                         TaskCategory category, std::vector<std::vector<int>> start)
{
  const auto s = static_cast<int>(stream);
  start.resize(compute_.size());
  std::vector<int> done(compute_.size(), -1);
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    std::vector<int> after = start[r];
    after.insert(after.end(), stream_waits_[s][r].begin(), stream_waits_[s][r].end());
    after.push_back(stream_[s][r]);
    auto name = fmt::format("{} (rank {})", label, r);
    done[r] = stream_[s][r] = kernel ? plan_.graph.add_compute(plan_.ranks[r], seconds, std::move(name), category, deps(after))
                                     : plan_.graph.add_delay(plan_.ranks[r], seconds, std::move(name), category, deps(after));
    stream_waits_[s][r].clear();
  }
  return done;
}

const std::vector<std::pair<int, int>>& ShardedRun::host_ends(std::size_t r)
{
  host_ends_.resize(plan_.ranks.size());
  auto& ends = host_ends_[r];
  if (!ends.empty())
    return ends;
  const int gpu = plan_.ranks[r];
  ends.emplace_back(gpu, host_cpu_of(topology_, gpu));
  // Folded, the node's other ranks copy theirs at the same moment (they run the same schedule), so
  // that the representative's copy shares the PCIe switches and CPU links as in the full run.
  if (folded_)
    for (const int other : plan_.ranks)
      if (other != gpu && topology_.device(other).node == topology_.device(gpu).node)
        ends.emplace_back(other, host_cpu_of(topology_, other));
  return ends;
}

std::vector<int> ShardedRun::host_copy(std::optional<Stream> stream, double bytes, bool to_host, bool pinned,
                                      const std::string& label, std::vector<std::vector<int>> start)
{
  start.resize(compute_.size());
  std::vector<int> done(compute_.size(), -1);
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    std::vector<int> after = start[r];
    int* last = nullptr;
    if (stream) {
      const auto s = static_cast<int>(*stream);
      after.insert(after.end(), stream_waits_[s][r].begin(), stream_waits_[s][r].end());
      after.push_back(stream_[s][r]);
      stream_waits_[s][r].clear();
      last = &stream_[s][r];
    } else {
      const auto c = compute_last(a);
      after.insert(after.end(), c.begin(), c.end());
      compute_waits_[r].clear();
      last = &compute_[r];
    }
    const auto& ends = host_ends(r);
    const auto after_deps = deps(after);
    const auto copy = [&](int g, int c, const std::string& name) {
      return c < 0 ? plan_.graph.add_delay(g, 0.0, name, TaskCategory::Offload, after_deps)
                   : plan_.graph.add_transfer(to_host ? g : c, to_host ? c : g, bytes, name, TaskCategory::Offload, after_deps);
    };
    const auto [gpu, cpu] = ends.front();
    const std::string name = fmt::format("{} (rank {})", label, r);
    done[r] = *last = copy(gpu, cpu, name);
    if (!pinned && cpu >= 0) {
      // Pageable: the driver's staging (one thread's memcpy, pipelined with the DMA) beside the
      // transfer; the copy ends when both have, and the host issues nothing before.
      const int staging = plan_.graph.add_delay(gpu, bytes / pageable_copy_bytes_per_s(topology_.host, to_host),
                                                name + " staged (pageable)", TaskCategory::Offload, after_deps);
      done[r] = *last = plan_.graph.add_delay(gpu, 0.0, name + " done", TaskCategory::Marker, {done[r], staging});
      if (stream)
        compute_waits_[r].push_back(done[r]);
    }
    for (std::size_t k = 1; k < ends.size(); ++k)  // nothing waits for the copies beside the representative
      copy(ends[k].first, ends[k].second, fmt::format("{} (GPU {}, beside rank {})", label, ends[k].first, r));
  }
  return done;
}

void ShardedRun::optimizer_step(double seconds, bool on_host)
{
  TaskGraph& g = plan_.graph;
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    std::vector<int> after = compute_last(a);
    for (const auto& stream : stream_)
      after.push_back(stream[r]);
    const std::string name = fmt::format("optimizer step (rank {})", r);
    const int step = seconds > 0 && !on_host ? g.add_compute(plan_.ranks[r], seconds, name, TaskCategory::Optimizer, deps(after))
                                             : g.add_delay(plan_.ranks[r], seconds, name, TaskCategory::Optimizer, deps(after));
    compute_[r] = step;
    compute_waits_[r].clear();
    for (int s = 0; s < kStreams; ++s) {
      stream_[s][r] = step;
      stream_waits_[s][r].clear();
    }
  }
}

void ShardedRun::end_iteration(int iteration)
{
  std::vector<int> all;
  for (const int a : active_) {
    const auto r = static_cast<std::size_t>(a);
    std::vector<int> after = compute_last(a);
    for (const auto& stream : stream_)
      after.push_back(stream[r]);
    all.insert(all.end(), after.begin(), after.end());
  }
  plan_.iteration_end.push_back(
      plan_.graph.add_delay(plan_.ranks[0], 0.0, fmt::format("iteration {} done", iteration), TaskCategory::Marker, deps(all)));
}

std::pair<std::string, std::string> ShardedRun::finish(const Scenario& scenario, double micro, int replicas,
                                                      int micro_steps, int ranks)
{
  const double per_loader = micro * micro_steps;
  plan_.samples_per_iteration = per_loader * replicas;
  plan_.input_seconds_per_iteration = loader_->batch_seconds(micro) * micro_steps;
  plan_.input_in_main_process = loader_->workers == 0;
  plan_.notes.push_back(loader_->describe() + " (one DataLoader per process)");
  if (const std::string host = loader_->host_note(per_loader, plan_.compute_per_iteration_s); !host.empty())
    plan_.notes.push_back(host);
  plan_.host = loader_->host_summary(per_loader, plan_.compute_per_iteration_s);
  std::pair<std::string, std::string> notes;
  if (folded_)
    notes = finish_one_representative(plan_, *folded_, step_jitter(scenario, ranks));
  else
    notes.first = apply_step_jitter(plan_.graph, plan_.ranks, step_jitter(scenario, ranks));
  plan_.memory_curve_device = plan_.ranks.front();
  plan_.gpu_memory_bytes = topology_.gpu.memory_bytes;
  plan_.notes.push_back(
      fmt::format("compute: {}; {}", describe_compute_source(scenario), compute_spread_note(scenario, topology_.gpu)));
  if (scenario.training.recomputation.any())
    plan_.notes.push_back(checkpointing_note(scenario.training.recomputation));
  return notes;
}

}  // namespace dtsim
