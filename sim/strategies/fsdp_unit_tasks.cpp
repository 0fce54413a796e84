// See fsdp_unit_tasks.hpp.
#include "sim/strategies/fsdp_unit_tasks.hpp"

#include "sim/strategies/zero_offload.hpp"

#include <fmt/format.h>

namespace dtsim {

namespace {

/// The limiter's depth: FSDP1's _free_event_queue lets two AllGathers run ahead of the frees
/// (_limiter_utils.py, _runtime_utils.py: `if len(queue) >= 2: queue.dequeue_if_needed()`); FSDP2
/// keeps two AllGather outputs alive (PyTorch PR #128884).
constexpr std::size_t kInflightAllGathers = 2;

}  // namespace

FsdpUnitTasks::FsdpUnitTasks(ShardedRun& run, const FsdpUnitTaskInputs& in, int ranks)
    : run_(run), in_(in), frees_(static_cast<std::size_t>(ranks))
{
}

void FsdpUnitTasks::limit(std::vector<std::vector<int>>& start)
{
  if (!in_.limited)
    return;
  for (const int r : run_.active()) {
    auto& q = frees_[static_cast<std::size_t>(r)];
    if (q.size() >= kInflightAllGathers) {
      start[static_cast<std::size_t>(r)].push_back(q.front());
      q.pop_front();
    }
  }
}

std::vector<int> FsdpUnitTasks::gather(int u, bool backward, const std::string& when, bool kept)
{
  const FsdpOptions& opt = in_.opt;
  const int S = in_.shard_ranks, K = in_.backward_ranks;
  const auto uz = static_cast<std::size_t>(u);
  std::vector<std::vector<int>> start(frees_.size());
  // Gathered since an earlier no_sync micro-step (kept_across_micro_steps): no AllGather, and no rate
  // limiter (its queue holds only the frees of units resharded); offloaded, pre_unshard still copies
  // the shard from the host (and casts it), not otherwise.
  if (kept && !opt.cpu_offload)
    return std::vector<int>{};
  std::vector<int> last;
  if (u != 0 && !in_.fsdp1_pre_unshard && !kept)
    limit(start);
  // The shard from the host, in its own dtype; a backward AllGather over a smaller re-shard world
  // gathers the copy kept on the GPU after forward instead.
  if (opt.cpu_offload && !(backward && K < S)) {
    const double bytes = in_.bytes.params[uz] / S * in_.sharded_bytes;
    h2d_bytes_ += building_ == 0 ? bytes : 0.0;
    last = run_.host_copy(ShardedRun::Stream::CopyIn, bytes, false, opt.cpu_offload_pinned,
                          fmt::format("{} shard from host ({})", in_.su.units[uz].name, when), start);
    start = run_.starts_after(last);
  }
  if (in_.copies_in) {
    last = run_.stream_kernel(ShardedRun::Stream::CopyIn, (backward ? in_.copies.copy_in_backward_s : in_.copies.copy_in_s)[uz],
                              fmt::format("{} {} ({})", in_.fsdp1_cast ? "cast to the low-precision shard" : "copy-in",
                                          in_.su.units[uz].name, when),
                              TaskCategory::FsdpCopyIn, start);
    start = run_.starts_after(last);
  }
  if (kept)
    return last;
  if (u != 0 && in_.fsdp1_pre_unshard)
    limit(start);
  const auto& groups = backward && K < S ? in_.groups.backward : in_.groups.shard;
  return run_.collective(CollectiveOp::AllGather, groups, in_.bytes.gather_bytes[uz],
                         fmt::format("all-gather {} ({})", in_.su.units[uz].name, when),
                         backward ? TaskCategory::AllGatherBackward : TaskCategory::AllGather, start, ShardedRun::Stream::Shard);
}

void FsdpUnitTasks::free_after(const std::vector<int>& tasks)
{
  for (const int r : run_.active())
    frees_[static_cast<std::size_t>(r)].push_back(tasks[static_cast<std::size_t>(r)]);
}

// The reduced gradient shard to the host on the stream that reduced it, in the shards' dtype. FSDP2
// adding it to the host gradient of an earlier micro-step copies synchronously and adds on the host:
// nothing more is issued until both are done.
void FsdpUnitTasks::offload_gradient(int u, int m, ShardedRun::Stream stream, const std::vector<int>& done)
{
  const FsdpOptions& opt = in_.opt;
  const double sbytes = in_.sharded_bytes;
  const auto uz = static_cast<std::size_t>(u);
  const double elements = in_.bytes.params[uz] / in_.shard_ranks;
  d2h_bytes_ += building_ == 0 ? elements * sbytes : 0.0;
  const auto copied = run_.host_copy(stream, elements * sbytes, true, opt.cpu_offload_pinned,
                                     in_.su.units[uz].name + " gradient shard to host", run_.starts_after(done));
  if (opt.version == 2 && m > 0 && !opt.no_sync)
    run_.wait_for(run_.stream_delay(stream, cpu_step_seconds(elements, 3 * sbytes, in_.node_ranks, opt.cpu_offload_threads, in_.host),
                                    "add " + in_.su.units[uz].name + " gradient shard on host", TaskCategory::Optimizer,
                                    run_.starts_after(copied)));
}

void FsdpUnitTasks::reduce(int u, int m)
{
  const FsdpOptions& opt = in_.opt;
  const Fsdp1GradPasses& gp = in_.passes;
  const FsdpGroups& groups = in_.groups;
  const auto uz = static_cast<std::size_t>(u);
  const auto& name = in_.su.units[uz].name;
  const double reduce_bytes = in_.bytes.reduce_bytes[uz];
  run_.stream_waits_for_compute(ShardedRun::Stream::Shard);
  // FSDP1: the post-backward stream waits for the gradient, casts and pre-divides it, issues the
  // reduction and waits for it, then post-divides, casts and accumulates the shard.
  std::vector<std::vector<int>> start;
  if (in_.fsdp1_passes && gp.before_s[uz] > 0) {
    run_.stream_waits_for_compute(ShardedRun::Stream::Reduce);
    start = run_.starts_after(run_.stream_kernel(ShardedRun::Stream::Reduce, gp.before_s[uz],
                                                 "cast and pre-divide " + name + " gradients", TaskCategory::FsdpGradPass, {}));
  }
  std::vector<int> done;
  if (!in_.sharded) {
    if (groups.reduce.empty())
      return;
    done = run_.collective(CollectiveOp::AllReduce, groups.reduce, reduce_bytes, "all-reduce " + name + " gradients",
                           TaskCategory::AllReduce, start, ShardedRun::Stream::Shard);
  } else {
    done = run_.collective(CollectiveOp::ReduceScatter, groups.shard, reduce_bytes, "reduce-scatter " + name + " gradients",
                           TaskCategory::ReduceScatter, start, ShardedRun::Stream::Shard);
    if (!groups.replicate.empty())  // HSDP: the reduced shard across the replicas, on their own process group
      done = run_.collective(CollectiveOp::AllReduce, groups.replicate, reduce_bytes / in_.shard_ranks,
                             "all-reduce " + name + " shard across replicas", TaskCategory::AllReduce, run_.starts_after(done),
                             ShardedRun::Stream::Replicate);
  }
  auto stream = groups.replicate.empty() ? ShardedRun::Stream::Shard : ShardedRun::Stream::Replicate;
  if (in_.fsdp1_passes) {
    run_.stream_waits_for(ShardedRun::Stream::Reduce, done);
    stream = ShardedRun::Stream::Reduce;
    const double after_s = gp.after_s[uz] + (m > 0 && !opt.no_sync ? gp.accumulate_s[uz] : 0.0);
    if (after_s > 0)
      done = run_.stream_kernel(ShardedRun::Stream::Reduce, after_s, "post-divide and cast " + name + " reduced gradients",
                                TaskCategory::FsdpGradPass, {});
  }
  if (opt.cpu_offload)
    offload_gradient(u, m, stream, done);
}

}  // namespace dtsim
