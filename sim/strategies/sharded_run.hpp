// The task-graph bookkeeping of a sharded data-parallel iteration (FSDP, ZeRO): per rank, the last
// task of its compute stream and of each NCCL stream (one per process group: collectives of one
// group queue behind each other, as ProcessGroupNCCL runs them on one stream per device), and
// helpers that add compute, a stage's pieces with their tensor-parallel collectives, a collective
// on many groups at once, and the optimizer step that closes an iteration.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/strategies/folded_comms.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtsim {

class ShardedRun {
public:
  /// The shard group's NCCL stream (AllGather, ReduceScatter); a second process group's: the
  /// replicas' (HSDP's and MiCS's AllReduce) or ZeRO++ hpZ's secondary groups (their AllGathers);
  /// a gradient reduction that is a chain of its own, kernels and collectives on other process
  /// groups issued one after another from one CUDA stream (ZeRO++ qgZ's quantized all-to-alls;
  /// FSDP1's post-backward stream, fsdp1_grad_passes.hpp); and the stream that prepares each
  /// AllGather's input (FSDP1's pre-unshard stream, FSDP2's all-gather copy-in stream).
  enum class Stream { Shard = 0, Replicate = 1, Reduce = 2, CopyIn = 3 };
  static constexpr int kStreams = 4;

  /// Ranks are indices into plan.ranks. With collectives.fold_ranks and more than one rank the run
  /// is folded (folded_comms.hpp): rank 0 stands for every rank, as they all run the same schedule;
  /// only it gets tasks, and every collective is a delay on it, timed with all the groups it runs on.
  ShardedRun(Plan& plan, const Topology& topology, const CollectiveOptions& collectives);

  /// The ranks that get tasks: every rank, or rank 0 of a folded run.
  const std::vector<int>& active() const { return active_; }

  /// Every stream of every rank starts after `task`.
  void start_all(int task);
  /// One DataLoader per entry of `ranks_per_loader` (a data-parallel rank's GPUs: its tensor ranks),
  /// on the CPU of its first GPU; `loader` must outlive this object.
  void add_loaders(const LoaderSpec& loader, const std::vector<std::vector<int>>& ranks_per_loader);
  /// Each DataLoader loads a batch of `samples` (its main process waits for its first GPU's
  /// compute), and each of its GPUs copies it in before its next compute.
  void load_inputs(double samples);
  /// What the next task on rank r's compute stream would wait for.
  std::vector<int> compute_last(int r) const;
  int last(int r) const { return compute_[static_cast<std::size_t>(r)]; }
  void set_last(int r, int task) { compute_[static_cast<std::size_t>(r)] = task; }
  /// The last compute task of every rank (after any pending waits are folded in).
  std::vector<int> compute_last_all();
  /// The next compute task of rank r also waits for per_rank[r] (-1: nothing).
  void wait_for(const std::vector<int>& per_rank);
  /// A `start` argument: every rank after its per_rank[r] (-1: nothing).
  std::vector<std::vector<int>> starts_after(const std::vector<int>& per_rank) const;
  /// The next compute task of every rank also waits for the last task of each of its streams (the
  /// compute stream waiting for the reductions at the end of a backward).
  void wait_for_streams();
  /// A compute task of `seconds` on every rank.
  void compute_all(double seconds, const std::string& name, TaskCategory category);
  /// A unit's pieces forward or backward (recomputation first) on every rank, each piece's
  /// tensor-parallel collectives on `tp_groups` after it, on the critical path.
  void pieces(const std::vector<StagePiece>& list, bool backward, const std::vector<std::vector<int>>& tp_groups,
              const std::string& where);
  /// The next collective on `stream` waits for every rank's compute so far (an event recorded on
  /// the compute stream, as FSDP's post-backward stream waits for the gradient computation).
  void stream_waits_for_compute(Stream stream);
  /// `op` of `bytes` (nccl-tests' count) on each group at once, queued on `stream` of its ranks,
  /// each rank also after start[r] (may be empty); a rooted op's root is each group's member at
  /// position `root`. Returns per rank the task after which it has its result (-1 for ranks in no
  /// group).
  std::vector<int> collective(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                              const std::string& label, TaskCategory category, std::vector<std::vector<int>> start,
                              Stream stream, int root = 0);
  /// A kernel of `seconds` on `stream` of every rank, after the stream's last task and start[r]
  /// (may be empty): the CUDA stream its collectives are issued from runs it between them. Its
  /// time is a delay: what it takes from the GPU's compute beside it is not modelled. Returns per
  /// rank the task (-1 for ranks not simulated).
  std::vector<int> stream_delay(Stream stream, double seconds, const std::string& label, TaskCategory category,
                                std::vector<std::vector<int>> start);
  /// The same as a kernel that shares the GPU with the compute beside it (a compute task, not a
  /// delay: the engine divides the device between them, so each runs slower while both do).
  std::vector<int> stream_kernel(Stream stream, double seconds, const std::string& label, TaskCategory category,
                                 std::vector<std::vector<int>> start);
  /// The next task on `stream` also waits for per_rank[r] (-1: nothing): a stream that waits for
  /// a collective it issued (a synchronous call waits on the current stream).
  void stream_waits_for(Stream stream, const std::vector<int>& per_rank);
  /// The optimizer step of `seconds` on every rank after its compute and every stream (every
  /// gradient reduced); the streams' next collectives wait for it. `on_host`: the step runs on the
  /// host's cores (ZeRO-Offload) and the GPU waits, idle.
  void optimizer_step(double seconds, bool on_host = false);
  /// A copy of `bytes` between every rank's GPU and the CPU nearest it (`to_host`: GPU -> host), over
  /// PCIe, queued on `stream` of the rank after start[r] (may be empty), or on its compute stream
  /// when `stream` is none. `pinned` false: the host buffer is pageable, so the CUDA driver stages the
  /// copy through its own pinned buffer, one CPU thread's memcpy at a time, and the call returns to
  /// the host only once the copy is done (CUDA Runtime API, "API synchronization behavior"): the copy
  /// lasts at least bytes / pageable_copy_bytes_per_s (loader.hpp: the host's measured rate, else
  /// one thread's memcpy), and the rank's next compute waits for it (DeepSpeed
  /// PR #8207: pageable offload buffers give "a synchronous, low-bandwidth (staged pageable) path with
  /// no overlap against backward compute"). Returns per rank the task (-1 for ranks not simulated).
  std::vector<int> host_copy(std::optional<Stream> stream, double bytes, bool to_host, bool pinned, const std::string& label,
                             std::vector<std::vector<int>> start);
  /// The marker closing iteration `iteration` (plan.iteration_end), after every rank's compute and streams.
  void end_iteration(int iteration);
  /// Once every iteration is built and plan.compute_per_iteration_s is set: the samples per
  /// iteration (micro x replicas x micro_steps), the DataLoader's time, notes and host use, the
  /// step-time jitter of the `ranks` synchronising ranks (folded: the representative at the slowest
  /// one's, plan.ranks narrowed to it), the GPU's capacity and the compute note. The plan's memory
  /// comes after (it is the narrowed ranks'). Returns the jitter note and the fold note ("" unfolded).
  std::pair<std::string, std::string> finish(const Scenario& scenario, double micro, int replicas, int micro_steps, int ranks);

private:
  /// waits[r] += per_rank[r] for each active rank r that has one.
  void append_each(std::vector<std::vector<int>>& waits, const std::vector<int>& per_rank) const;
  std::vector<int> stream_task(bool kernel, Stream stream, double seconds, const std::string& label, TaskCategory category,
                               std::vector<std::vector<int>> start);
  Plan& plan_;
  const Topology& topology_;
  const CollectiveOptions& options_;
  const LoaderSpec* loader_ = nullptr;
  std::optional<FoldedComms> folded_;
  std::vector<int> active_;
  /// Folded: per rank, its (group, position) in `groups` for each active rank that is in one.
  std::vector<FoldedComms::Member> members(const std::vector<std::vector<int>>& groups,
                                           const std::vector<std::vector<int>>& after) const;
  /// Per rank, the (GPU, nearest CPU) pairs its host copies run between: its own first, then, folded,
  /// the other GPUs of its node; found at its first copy.
  std::vector<std::vector<std::pair<int, int>>> host_ends_;
  const std::vector<std::pair<int, int>>& host_ends(std::size_t r);
  std::vector<LoaderLane> lanes_;
  std::vector<std::vector<int>> lane_ranks_;
  std::vector<int> compute_;
  std::vector<std::vector<int>> compute_waits_;
  std::vector<int> stream_[kStreams];
  std::vector<std::vector<int>> stream_waits_[kStreams];
};

}  // namespace dtsim
