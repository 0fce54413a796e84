// See fsdp.hpp.
#include "sim/strategies/fsdp.hpp"

#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/fsdp1_grad_passes.hpp"
#include "sim/strategies/fsdp_cpu_offload.hpp"
#include "sim/strategies/fsdp2_copies.hpp"
#include "sim/strategies/fsdp_pieces_slowdown.hpp"
#include "sim/strategies/interference.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/shard_units.hpp"
#include "sim/strategies/sharded_memory.hpp"
#include "sim/strategies/sharded_run.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/strategies/zero_offload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>

namespace dtsim {

namespace {

/// The limiter's depth: FSDP1's _free_event_queue lets two AllGathers run ahead of the frees
/// (_limiter_utils.py, _runtime_utils.py: `if len(queue) >= 2: queue.dequeue_if_needed()`); FSDP2
/// keeps two AllGather outputs alive (PyTorch PR #128884).
constexpr std::size_t kInflightAllGathers = 2;

struct UnitTimes {
  std::vector<StagePiece> pieces;
};

}  // namespace

Plan build_fsdp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                     const CollectiveOptions& collectives)
{
  const int T = scenario.strategy_spec.tensor, D = scenario.strategy_spec.data;
  const FsdpOptions opt = parse_fsdp_options(scenario, D, T, topology.gpus_per_node);
  if (T > 1)
    check_heads_divide(model, T, scenario.strategy_options().at("tensor_parallel"));
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  plan.warmup_iterations = warmup;
  const int n = static_cast<int>(plan.ranks.size());
  const int M = scenario.training.batch.accumulation;
  const double micro = static_cast<double>(scenario.training.batch_per_gpu);
  const MemoryRules mem = memory_rules(scenario);
  const LayerTimes mt = layer_times(model, scenario, topology.gpu, micro, opt.half_efficiency_samples,
                                    TensorSplit{T, opt.sequence_parallel && T > 1});
  const ShardUnits su = shard_units(model);
  TensorParallelOptions tp{T, opt.sequence_parallel, scenario.training.activation_checkpointing};
  tp.loss_parallel = opt.loss_parallel;
  tp.gather_per_linear = opt.gather_per_linear;
  std::vector<std::vector<StagePiece>> pieces;
  double compute_s = 0;
  const StageMarks marks = stage_marks(model);
  for (const auto& seg : su.segments) {
    pieces.push_back(stage_pieces(model, marks, mt, seg.layers, micro, mem.activation_bytes, tp));
    for (const auto& p : pieces.back())
      compute_s += p.fwd_s + p.bwd_s + p.recompute_s;
  }
  const int S = opt.sharding == Sharding::NoShard ? 1 : opt.shard_group;  // ranks a parameter is sharded over
  // Gathered parameters: param_dtype, or float8 linears beside bf16 (gathered_bytes); ubytes: the
  // unsharded parameters outside the float8 linears, and gradients.
  const double ubytes = dtype_bytes(unsharded_dtype(opt)), rbytes = dtype_bytes(opt.reduce_dtype);
  const bool sharded = opt.sharding != Sharding::NoShard && S > 1;
  // FSDP2 unshards over a group of one rank too (keeps_unsharded_buffers): no collective, but the copy of
  // the sharded data into the unsharded buffers (_fsdp_param_group.py wait_for_unshard, world_size 1).
  const bool unshards = keeps_unsharded_buffers(opt);
  const bool gather_backward = sharded && opt.reshard_after_forward;
  const bool limited = opt.version == 2 || opt.limit_all_gathers;
  const int U = static_cast<int>(su.units.size());
  // FSDP1 without reshard after forward (shard_grad_op, hybrid_shard's _HYBRID_SHARD_ZERO2) keeps its units
  // gathered through a no_sync micro-step's backward (_runtime_utils.py _post_backward_reshard frees only
  // where _should_free_in_backward: `state._sync_gradients or handle._sharding_strategy in
  // RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES`, FULL_SHARD and HYBRID_SHARD), so the next micro-step's
  // _unshard finds them unsharded (_flat_param.py FlatParamHandle.unshard: `if not self.needs_unshard()`)
  // and issues no AllGather: only the first micro-step gathers. Its pre_unshard still runs under CPU
  // offload (its no-op branch requires `not self._offload_params`): the shard still comes from the host.
  const bool kept_across_micro_steps = keeps_gathered_across_micro_steps(opt, M);

  // Groups of rank indices (r = d * T + t; torchtitan's mesh puts the tensor dimension innermost).
  const auto rank = [T](int d, int t) { return d * T + t; };
  std::vector<std::vector<int>> shard_groups, back_groups, replicate_groups, tp_groups, reduce_groups;
  const int K = opt.reshard_ranks > 0 ? opt.reshard_ranks : S;  // backward AllGather's world
  for (int b = 0; b < D / S; ++b)
    for (int t = 0; t < T; ++t) {
      std::vector<int> grp;
      for (int j = 0; j < S; ++j)
        grp.push_back(rank(b * S + j, t));
      shard_groups.push_back(grp);
      for (int c = 0; c < S / K; ++c)
        back_groups.emplace_back(grp.begin() + c * K, grp.begin() + (c + 1) * K);
    }
  if (D / S > 1)
    for (int j = 0; j < S; ++j)
      for (int t = 0; t < T; ++t) {
        std::vector<int> grp;
        for (int b = 0; b < D / S; ++b)
          grp.push_back(rank(b * S + j, t));
        replicate_groups.push_back(grp);
      }
  for (int d = 0; d < D; ++d) {
    std::vector<int> grp;
    for (int t = 0; t < T; ++t)
      grp.push_back(rank(d, t));
    tp_groups.push_back(grp);
  }
  if (!sharded && D > 1)
    for (int t = 0; t < T; ++t) {
      std::vector<int> grp;
      for (int d = 0; d < D; ++d)
        grp.push_back(rank(d, t));
      reduce_groups.push_back(grp);
    }

  // Per tensor rank: each unit's parameters, their bytes gathered and reduced.
  std::vector<double> unit_params(static_cast<std::size_t>(U)), unit_gather_bytes(static_cast<std::size_t>(U)),
      unit_reduce_bytes(static_cast<std::size_t>(U));
  for (std::size_t u = 0; u < static_cast<std::size_t>(U); ++u) {
    unit_params[u] = su.units[u].params / T;
    unit_gather_bytes[u] = gathered_bytes(su.units[u], opt) / T;
  }
  // A replicated token embedding (FsdpOptions::replicate_embedding) is whole in each tensor rank's root.
  const double embedding_whole = opt.replicate_embedding ? embedding_params(model) * (1 - 1.0 / T) : 0.0;
  unit_params[0] += embedding_whole;
  unit_gather_bytes[0] += embedding_whole * ubytes;
  for (std::size_t u = 0; u < static_cast<std::size_t>(U); ++u)
    unit_reduce_bytes[u] = unit_params[u] * rbytes;
  // FSDP2's copies (fsdp2_copies.hpp): each shard into its AllGather's input beside compute; on the compute
  // stream the gathered parameters out before each unit's forward, and again before its backward when it
  // was resharded, and each unit's gradients in its post_backward.
  const bool fsdp2_copies = unshards && opt.version == 2;
  // FSDP1 with a param_dtype other than the shards' casts each shard into its low-precision copy, the
  // AllGather's input, on its pre-unshard stream (_flat_param.py pre_unshard, _use_low_precision_shard):
  // the same traffic as FSDP2's forward copy-in. It is issued before the rate limiter's wait
  // (_runtime_utils.py _unshard), so it does not wait for the free event as the AllGather does.
  const bool fsdp1_cast = opt.version == 1 && sharded && unsharded_dtype(opt) != opt.sharded_dtype;
  const bool copies_in = sharded && (fsdp2_copies || fsdp1_cast);
  const Fsdp2Copies gc = fsdp2_copies_of(
      unit_params, unit_gather_bytes, {dtype_bytes(opt.sharded_dtype), ubytes, rbytes}, S, K,
      fsdp2_copies && opt.no_sync && M > 1 && opt.reduce_dtype != unsharded_dtype(opt), topology.gpu);
  // FSDP1's casts and divisions of each unit's gradients on its post-backward stream, around the reduction
  // (fsdp1_grad_passes.hpp): over the shard group, or every data rank under NO_SHARD.
  const bool fsdp1_passes = opt.version == 1 && (sharded || !reduce_groups.empty());
  const Fsdp1GradPasses gp =
      fsdp1_passes ? fsdp1_grad_passes(unit_params, {unsharded_dtype(opt), opt.reduce_dtype, opt.sharded_dtype},
                                       sharded ? S : D, sharded ? S : 1, sharded ? D / S : 1, topology.gpu)
                   : Fsdp1GradPasses{};
  // Units in the order their backward begins (the reverse of their last forward segment), root aside.
  std::vector<int> last_segment(static_cast<std::size_t>(U), -1), first_segment(static_cast<std::size_t>(U), -1);
  for (std::size_t s = 0; s < su.segments.size(); ++s) {
    const auto u = static_cast<std::size_t>(su.segments[s].unit);
    last_segment[u] = static_cast<int>(s);
    if (first_segment[u] < 0)
      first_segment[u] = static_cast<int>(s);
  }
  std::vector<int> backward_order;
  for (int s = static_cast<int>(su.segments.size()) - 1; s >= 0; --s) {
    const int u = su.segments[static_cast<std::size_t>(s)].unit;
    if (u != 0 && last_segment[static_cast<std::size_t>(u)] == s)
      backward_order.push_back(u);
  }

  // Compute beside the shard group's NCCL kernels runs slower (fsdp_pieces_slowdown.hpp).
  const double memory_bound = memory_bound_share(model, topology.gpu, scenario.training.precision, micro);
  FsdpPiecesSlowdown slowdown;
  if (sharded) {
    FsdpUnitCollectives uc{{}, {}, unit_gather_bytes, unit_reduce_bytes, first_segment, last_segment, gather_backward,
                           opt.no_sync ? 1.0 / M : 1.0, kept_across_micro_steps ? 1.0 / M : 1.0};
    for (int r : shard_groups[0])
      uc.shard_devices.push_back(plan.ranks[static_cast<std::size_t>(r)]);
    for (int r : K < S ? back_groups[0] : shard_groups[0])
      uc.backward_devices.push_back(plan.ranks[static_cast<std::size_t>(r)]);
    slowdown = slow_pieces_beside_collectives(pieces, su, uc, topology, collectives.filter, memory_bound);
    plan.nccl_slowdown_per_iteration_s = slowdown.seconds_per_micro_step * M;
    compute_s += slowdown.seconds_per_micro_step;
  }

  ShardedRun run(plan, topology, collectives);
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks),
                                         host_extras(topology, plan.ranks, compute_s > 0 ? micro / compute_s : 0.0));
  run.add_loaders(loader, tp_groups);  // a data rank's tensor ranks share its batch
  const bool half_weights = scenario.training.precision == Precision::Fp16 || scenario.training.precision == Precision::Bf16;
  const bool add_optimizer = scenario.training.compute.source == ComputeSpec::Source::Flops;
  const double shard_params = (static_cast<double>(model.params()) / T + embedding_whole) / S;
  const double optimizer_s =
      !add_optimizer ? 0.0
      : opt.sharded_dtype != "fp32"
          ? optimizer_seconds_in_dtype(shard_params, dtype_bytes(opt.sharded_dtype), mem.optimizer_bytes, topology.gpu)
          : optimizer_seconds(shard_params, mem, half_weights, topology.gpu);
  // CPU offload (fsdp_cpu_offload.hpp): the shards come from the host before each AllGather, the gradient
  // shards go back after each reduction, and torch.optim steps on the host's cores, every process of a
  // node at once, while the GPU idles. The step is added whatever the compute source: a measured GPU
  // step time holds no host step.
  const bool offload = opt.cpu_offload;
  const double sbytes = dtype_bytes(opt.sharded_dtype);
  const int node_ranks = processes_per_node(topology, plan.ranks);
  if (offload && !(topology.host.memory_bytes_per_s_per_socket > 0))
    scenario.strategy_options().at("cpu_offload").fail(
        "expected a cluster whose host gives memory_gbytes_per_s_per_socket (the CPU optimizer step of FSDP's CPU offload is "
        "bound by it)");
  const double host_step_s =
      offload ? cpu_step_seconds(shard_params, torch_cpu_step_bytes_per_element(scenario.training.optimizer, sbytes), node_ranks,
                                 opt.cpu_offload_threads, topology.host)
              : 0.0;

  TaskGraph& g = plan.graph;
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", TaskCategory::Marker, {});
  run.start_all(plan.setup_end);
  std::vector<std::deque<int>> frees(static_cast<std::size_t>(n));  // per rank: the limiter's free events (tasks)
  const auto limit = [&](std::vector<std::vector<int>>& start) {
    if (!limited)
      return;
    for (const int r : run.active()) {
      auto& q = frees[static_cast<std::size_t>(r)];
      if (q.size() >= kInflightAllGathers) {
        start[static_cast<std::size_t>(r)].push_back(q.front());
        q.pop_front();
      }
    }
  };
  // FSDP1's pre-unshard stream (the cast to param_dtype, the copy from the host) runs ahead of the limiter.
  const bool fsdp1_pre_unshard = fsdp1_cast || (opt.version == 1 && offload);
  double h2d_bytes = 0, d2h_bytes = 0;  // per rank, in the first iteration: the offload's copies
  int building = 0;                     // the iteration being built
  const auto gather = [&](int u, bool backward, const std::string& when, bool kept = false) {
    const auto uz = static_cast<std::size_t>(u);
    std::vector<std::vector<int>> start(static_cast<std::size_t>(n));
    // Gathered since an earlier no_sync micro-step (kept_across_micro_steps): no AllGather, and no rate
    // limiter (its queue holds only the frees of units resharded); offloaded, pre_unshard still copies
    // the shard from the host (and casts it), not otherwise.
    if (kept && !offload)
      return std::vector<int>{};
    std::vector<int> last;
    if (u != 0 && !fsdp1_pre_unshard && !kept)
      limit(start);
    // The shard from the host, in its own dtype; a backward AllGather over a smaller re-shard world
    // gathers the copy kept on the GPU after forward instead.
    if (offload && !(backward && K < S)) {
      const double bytes = unit_params[uz] / S * sbytes;
      h2d_bytes += building == 0 ? bytes : 0.0;
      last = run.host_copy(ShardedRun::Stream::CopyIn, bytes, false, opt.cpu_offload_pinned,
                           fmt::format("{} shard from host ({})", su.units[uz].name, when), start);
      start = run.starts_after(last);
    }
    if (copies_in) {
      last = run.stream_kernel(
          ShardedRun::Stream::CopyIn, (backward ? gc.copy_in_backward_s : gc.copy_in_s)[static_cast<std::size_t>(u)],
          fmt::format("{} {} ({})", fsdp1_cast ? "cast to the low-precision shard" : "copy-in",
                      su.units[static_cast<std::size_t>(u)].name, when),
          TaskCategory::FsdpCopyIn, start);
      start = run.starts_after(last);
    }
    if (kept)
      return last;
    if (u != 0 && fsdp1_pre_unshard)
      limit(start);
    const auto& groups = backward && K < S ? back_groups : shard_groups;
    return run.collective(CollectiveOp::AllGather, groups, unit_gather_bytes[static_cast<std::size_t>(u)],
                          fmt::format("all-gather {} ({})", su.units[static_cast<std::size_t>(u)].name, when),
                          backward ? TaskCategory::AllGatherBackward : TaskCategory::AllGather,
                          start, ShardedRun::Stream::Shard);
  };
  const auto free_after = [&](const std::vector<int>& tasks) {
    for (const int r : run.active())
      frees[static_cast<std::size_t>(r)].push_back(tasks[static_cast<std::size_t>(r)]);
  };

  const int setup_tasks = g.size();
  for (int it = 0; it < iterations; ++it) {
    if (it == 1)
      g.reserve(setup_tasks + (g.size() - setup_tasks) * iterations);
    g.set_iteration(it);
    building = it;
    for (int m = 0; m < M; ++m) {
      const bool sync = !opt.no_sync || m + 1 == M;
      run.load_inputs(micro);
      // A host that waits for the GPU after each micro-step (training.host_sync) issues this one's
      // AllGathers only once the last one's backward has run: none is prefetched across them.
      if (m > 0 && scenario.training.host_sync_each_micro_step)
        run.stream_waits_for_compute(ShardedRun::Stream::Shard);
      // Forward: every unit's AllGather in order (the root's first), each unit's compute after its own. The
      // root pre-forward makes the copy-in (FSDP2) or pre-unshard (FSDP1) stream wait for the compute stream
      // (the updated shards).
      if (copies_in || offload)
        run.stream_waits_for_compute(ShardedRun::Stream::CopyIn);
      // Each AllGather is issued where the host reaches its unit's pre-forward (forward_prefetch: one
      // unit earlier), after the compute issued before it, so that the limiter's wait finds the
      // frees of the units before: the host issues a unit's AllGather once the GPU has freed the
      // unit two before it, and no sooner (FSDP1 _runtime_utils.py _unshard with
      // limit_all_gathers, FSDP2's two all-gather states).
      std::vector<std::vector<int>> gathered(static_cast<std::size_t>(U));
      const bool kept = kept_across_micro_steps && m > 0;
      const auto gather_forward = [&](int u) {
        if (sharded && u < U && gathered[static_cast<std::size_t>(u)].empty())
          gathered[static_cast<std::size_t>(u)] = gather(u, false, "forward", kept);
      };
      for (std::size_t s = 0; s < su.segments.size(); ++s) {
        const int u = su.segments[s].unit;
        const auto& name = su.units[static_cast<std::size_t>(u)].name;
        if (unshards && first_segment[static_cast<std::size_t>(u)] == static_cast<int>(s)) {
          gather_forward(u);
          if (opt.version == 1 && opt.forward_prefetch && s + 1 < su.segments.size())
            gather_forward(su.segments[s + 1].unit);
          if (sharded)
            run.wait_for(gathered[static_cast<std::size_t>(u)]);
          if (fsdp2_copies)
            run.compute_all(gc.copy_out_s[static_cast<std::size_t>(u)], "copy-out " + name, TaskCategory::FsdpCopy);
        }
        run.pieces(pieces[s], false, tp_groups, name);
        if (sharded && u != 0 && opt.reshard_after_forward && last_segment[static_cast<std::size_t>(u)] == static_cast<int>(s))
          free_after(run.compute_last_all());
      }
      // Backward: units in reverse; each unit's AllGather (or its prefetch), backward, ReduceScatter.
      std::vector<std::vector<int>> back_gathered(static_cast<std::size_t>(U));
      const auto gather_for_backward = [&](std::size_t i, bool after_compute) {
        if (!gather_backward || i >= backward_order.size())
          return;
        const int u = backward_order[i];
        if (!back_gathered[static_cast<std::size_t>(u)].empty())
          return;
        if (after_compute)
          run.stream_waits_for_compute(ShardedRun::Stream::Shard);
        back_gathered[static_cast<std::size_t>(u)] = gather(u, true, "backward");
      };
      // The reduced gradient shard to the host on the stream that reduced it, in the shards' dtype. FSDP2
      // adding it to the host gradient of an earlier micro-step copies synchronously and adds on the host:
      // nothing more is issued until both are done.
      const auto offload_gradient = [&](int u, int m, ShardedRun::Stream stream, const std::vector<int>& done) {
        const auto uz = static_cast<std::size_t>(u);
        const double elements = unit_params[uz] / S;
        d2h_bytes += building == 0 ? elements * sbytes : 0.0;
        const auto copied = run.host_copy(stream, elements * sbytes, true, opt.cpu_offload_pinned,
                                          su.units[uz].name + " gradient shard to host", run.starts_after(done));
        if (opt.version == 2 && m > 0 && !opt.no_sync)
          run.wait_for(run.stream_delay(stream, cpu_step_seconds(elements, 3 * sbytes, node_ranks, opt.cpu_offload_threads, topology.host),
                                        "add " + su.units[uz].name + " gradient shard on host", TaskCategory::Optimizer,
                                        run.starts_after(copied)));
      };
      const auto reduce = [&](int u, int m) {
        const auto uz = static_cast<std::size_t>(u);
        const auto& name = su.units[uz].name;
        run.stream_waits_for_compute(ShardedRun::Stream::Shard);
        // FSDP1: the post-backward stream waits for the gradient, casts and pre-divides it, issues the
        // reduction and waits for it, then post-divides, casts and accumulates the shard.
        std::vector<std::vector<int>> start;
        if (fsdp1_passes && gp.before_s[uz] > 0) {
          run.stream_waits_for_compute(ShardedRun::Stream::Reduce);
          start = run.starts_after(run.stream_kernel(ShardedRun::Stream::Reduce, gp.before_s[uz],
                                                     "cast and pre-divide " + name + " gradients", TaskCategory::FsdpGradPass, {}));
        }
        std::vector<int> done;
        if (!sharded) {
          if (reduce_groups.empty())
            return;
          done = run.collective(CollectiveOp::AllReduce, reduce_groups, unit_reduce_bytes[uz], "all-reduce " + name + " gradients",
                                TaskCategory::AllReduce, start, ShardedRun::Stream::Shard);
        } else {
          done = run.collective(CollectiveOp::ReduceScatter, shard_groups, unit_reduce_bytes[uz], "reduce-scatter " + name + " gradients",
                                TaskCategory::ReduceScatter, start, ShardedRun::Stream::Shard);
          if (!replicate_groups.empty())  // HSDP: the reduced shard across the replicas, on their own process group
            done = run.collective(CollectiveOp::AllReduce, replicate_groups, unit_reduce_bytes[uz] / S,
                                  "all-reduce " + name + " shard across replicas", TaskCategory::AllReduce, run.starts_after(done),
                                  ShardedRun::Stream::Replicate);
        }
        auto stream = replicate_groups.empty() ? ShardedRun::Stream::Shard : ShardedRun::Stream::Replicate;
        if (fsdp1_passes) {
          run.stream_waits_for(ShardedRun::Stream::Reduce, done);
          stream = ShardedRun::Stream::Reduce;
          const double after_s = gp.after_s[uz] + (m > 0 && !opt.no_sync ? gp.accumulate_s[uz] : 0.0);
          if (after_s > 0)
            done = run.stream_kernel(ShardedRun::Stream::Reduce, after_s, "post-divide and cast " + name + " reduced gradients",
                                     TaskCategory::FsdpGradPass, {});
        }
        if (offload)
          offload_gradient(u, m, stream, done);
      };
      // A unit's post_backward: FSDP2's gradient copies on the compute stream, then, on a micro-step that
      // reduces, its reduction on the shard group's stream.
      const auto post_backward = [&](int u) {
        const auto uz = static_cast<std::size_t>(u);
        const auto& name = su.units[uz].name;
        if (gc.accumulates_upcast)
          run.compute_all(m == 0 ? gc.upcast_s[uz] : gc.accumulate_s[uz],
                          (m == 0 ? "upcast " : "accumulate ") + name + " gradients", TaskCategory::FsdpGradCopy);
        if (!sync)
          return;
        if (fsdp2_copies)
          run.compute_all(gc.grad_copy_in_s[uz], "copy-in " + name + " gradients", TaskCategory::FsdpGradCopy);
        reduce(u, m);
      };
      std::size_t next = 0;  // index into backward_order of the next unit whose backward begins
      for (int s = static_cast<int>(su.segments.size()) - 1; s >= 0; --s) {
        const auto si = static_cast<std::size_t>(s);
        const int u = su.segments[si].unit;
        const auto& name = su.units[static_cast<std::size_t>(u)].name;
        const bool begins = u != 0 && last_segment[static_cast<std::size_t>(u)] == s;
        if (begins) {
          gather_for_backward(next, false);
          if (opt.backward_prefetch == BackwardPrefetch::Pre)
            gather_for_backward(next + 1, false);
          if (gather_backward)
            run.wait_for(back_gathered[static_cast<std::size_t>(u)]);
          if (fsdp2_copies && opt.reshard_after_forward)
            run.compute_all(gc.copy_out_s[static_cast<std::size_t>(u)], "copy-out " + name + " (backward)",
                            TaskCategory::FsdpCopyBackward);
          ++next;
        }
        run.pieces(pieces[si], true, tp_groups, name);
        const bool ends = first_segment[static_cast<std::size_t>(u)] == s;
        if (!ends || u == 0)
          continue;
        if (gather_backward)
          free_after(run.compute_last_all());
        // backward_post: the next unit's AllGather once this unit's gradients are computed, as
        // torch/distributed/fsdp/api.py (BackwardPrefetch) describes it: what overlaps is this unit's
        // ReduceScatter and the next unit's gradient computation, not this unit's. (_runtime_utils.py issues
        // it from the post-backward hook, on the host, with the limiter holding the host a unit
        // ahead, so it could overlap this backward; measured runs overlap less still:
        // tests/data/training/fsdp_microbatch_foundry.csv, whose worst row goes from +19.8% to
        // +30.2% with it issued beside this backward.)
        if (opt.backward_prefetch == BackwardPrefetch::Post)
          gather_for_backward(next, true);
        post_backward(u);
      }
      post_backward(0);
      // The end of a backward that reduced: the compute stream waits for the reductions (FSDP1's
      // _post_backward_final_callback waits for the post-backward stream, FSDP2's finalize_backward for
      // each group's post-reduce event) before the next micro-step's forward.
      if (sync && m + 1 < M)
        run.wait_for_streams();
    }
    if (offload)
      run.optimizer_step(host_step_s, true);
    else
      run.optimizer_step(optimizer_s);
    run.end_iteration(it);
  }
  g.set_iteration(0);

  // Figures of one iteration, per communicator.
  double all_params = 0, all_gathered = 0, unit_gathered = 0;  // per tensor rank: params, gathered bytes
  for (std::size_t u = 0; u < static_cast<std::size_t>(U); ++u) {
    all_params += unit_params[u];
    all_gathered += unit_gather_bytes[u];
    if (u != 0)
      unit_gathered += unit_gather_bytes[u];
  }
  const int syncs = opt.no_sync ? 1 : M;
  if (sharded) {
    const int groups = static_cast<int>(shard_groups.size());
    const int gathering_steps = kept_across_micro_steps ? 1 : M;  // micro-steps that AllGather in forward
    plan.comm_per_iteration.push_back(
        {"parameters (forward)", "all_gather", all_gathered * gathering_steps, U * gathering_steps, groups});
    if (gather_backward)
      plan.comm_per_iteration.push_back({"parameters (backward)", "all_gather", unit_gathered * M, (U - 1) * M,
                                         static_cast<int>(back_groups.size())});
    plan.comm_per_iteration.push_back({"gradients", "reduce_scatter", all_params * rbytes * syncs, U * syncs, groups});
    if (!replicate_groups.empty())
      plan.comm_per_iteration.push_back({"gradient shards across replicas", "all_reduce", all_params / S * rbytes * syncs,
                                         U * syncs, static_cast<int>(replicate_groups.size())});
  } else if (!reduce_groups.empty()) {
    plan.comm_per_iteration.push_back({"gradients", "all_reduce", all_params * rbytes * syncs, U * syncs,
                                       static_cast<int>(reduce_groups.size())});
  }
  if (T > 1) {  // the tensor ranks' collectives, as the Megatron-style builders list them
    std::map<CollectiveOp, std::pair<double, int>> per_op;  // bytes and calls per micro-batch, both directions
    for (const auto& segment_pieces : pieces)
      add_tensor_parallel_traffic(segment_pieces, per_op);
    for (const auto& [op, sum] : per_op)
      plan.comm_per_iteration.push_back({"tensor-parallel", to_string(op), sum.first * M, sum.second * M, D});
  }
  if (offload) {
    const int h2d_calls = U * M + (gather_backward && K == S ? (U - 1) * M : 0);
    plan.comm_per_iteration.push_back({"parameter shards (CPU offload)", "host -> GPU", h2d_bytes, h2d_calls, n});
    plan.comm_per_iteration.push_back({"gradient shards (CPU offload)", "GPU -> host", d2h_bytes, U * syncs, n});
  }
  // The copies' and passes' GPU time per iteration (fsdp2_copies.hpp, fsdp1_grad_passes.hpp).
  const double copy_out_s = fsdp2_copies ? gc.copy_out_per_iteration_s(M, opt.reshard_after_forward) : 0.0;
  const double grad_copy_s = fsdp2_copies ? gc.gradients_per_iteration_s(syncs, M) : 0.0;
  // FSDP1's cast into the low-precision shard runs in pre_unshard, a no-op for a unit kept gathered unless
  // offloaded (_flat_param.py pre_unshard).
  const double copy_in_s = copies_in ? gc.copy_in_per_iteration_s(kept_across_micro_steps && !offload ? 1 : M, gather_backward) : 0.0;
  const double grad_pass_s = fsdp1_passes ? gp.per_iteration_s(syncs, M) : 0.0;
  plan.compute_per_iteration_s = compute_s * M + copy_in_s + copy_out_s + grad_copy_s + grad_pass_s + (offload ? 0.0 : optimizer_s);
  // One GPU alone splits nothing (the roofline's times above count unsplit kernels on each tensor rank);
  // it recomputes as the ranks do and steps the optimizer over the whole model (the shard's, scaled),
  // once per M micro-batches as the ranks do.
  const LayerTimes one_gpu =
      with_recomputation(model, T > 1 ? layer_times(model, scenario, topology.gpu, micro, opt.half_efficiency_samples) : mt,
                         scenario.training.activation_checkpointing);
  plan.single_gpu_iteration_s =
      one_gpu.fwd_total() + one_gpu.bwd_total() +
      (one_gpu.optimizer_s + (shard_params > 0 ? optimizer_s * static_cast<double>(model.params()) / shard_params : 0.0)) / M;
  const auto [jitter_note, fold_note] = run.finish(scenario, micro, D, M, n);
  plan.memory = sharded_fsdp_memory(model, su, scenario, topology.gpu, opt, plan.ranks, T, micro, loader.input_bytes_per_sample,
                                    &plan.memory_curve);
  plan.notes.push_back(fmt::format(
      "FSDP{} {}: {} units (root + {}), sharded over {} rank{}{}{}; parameters gathered in {}, gradients reduced in {}; {}",
      opt.version, to_string(opt.sharding), U, U - 1, S, S == 1 ? "" : "s",
      D / S > 1 ? fmt::format(" x {} replicas", D / S) : "",
      opt.sharded_dtype != "fp32"
          ? fmt::format(" in {} (weights, gradients and optimizer states: no fp32 master weights)", opt.sharded_dtype)
          : "",
      opt.param_dtype == "fp8" ? "fp8 (the blocks' linear weights, torchao's float8 all-gather; the rest in bf16)" : opt.param_dtype,
      opt.reduce_dtype,
      !sharded ? (unshards ? fmt::format("a shard group of one rank: gathered into its own buffers without a collective, "
                                         "gradients copied through them{}", D > 1 ? ", then AllReduced per unit" : "")
                           : "no sharding: AllReduce per unit")
      : gather_backward
          ? fmt::format("AllGather again in backward{} ({} prefetch){}", K < S ? fmt::format(" over {} ranks", K) : "",
                        opt.version == 2 ? "one-unit explicit" : to_string(opt.backward_prefetch),
                        limited ? ", at most two AllGathers ahead of the frees" : "")
          : "parameters kept from forward to backward"));
  if (fsdp2_copies)
    plan.notes.push_back(fsdp2_copies_note(copy_out_s, opt.reshard_after_forward, grad_copy_s, copy_in_s));
  if (fsdp1_cast)
    plan.notes.push_back(fsdp1_cast_note(opt.sharded_dtype, unsharded_dtype(opt), copy_in_s));
  if (grad_pass_s > 0)
    plan.notes.push_back(fsdp1_grad_passes_note(gp, grad_pass_s, sharded && !opt.no_sync && M > 1));
  if (M > 1)
    plan.notes.push_back(fmt::format(
        "{} micro-steps per optimizer step, {}{}", M,
        opt.no_sync ? "gradients reduced in the last only (no_sync)" : "gradients reduced in each",
        scenario.training.host_sync_each_micro_step
            ? "; the host waits for the GPU after each (training.host_sync): none of the next one's AllGathers is "
              "issued before it ends"
            : ""));
  if (T > 1)
    plan.notes.push_back(fmt::format("tensor parallel {} inside each data rank (torchtitan 2-D){}", T,
                                     opt.sequence_parallel ? ", sequence parallel" : ""));
  if (offload) {
    const double host_bytes = shard_params * fsdp_offload_host_bytes_per_element(sbytes, mem.optimizer_bytes);
    plan.host_offload_bytes_per_node = host_bytes * node_ranks;
    plan.notes.push_back(fsdp_cpu_offload_note(host_bytes, node_ranks, opt.cpu_offload_pinned, opt.cpu_offload_threads, host_step_s, h2d_bytes,
                                               d2h_bytes, topology.host));
  } else {
    plan.notes.push_back(optimizer_note(add_optimizer, fmt::format("1/{} shard", S)));
  }
  if (sharded)
    plan.notes.push_back(
        fsdp_slowdown_note(topology.gpu, slowdown.channels, memory_bound, plan.nccl_slowdown_per_iteration_s));
  if (!fold_note.empty())
    plan.notes.push_back(fold_note);
  plan.notes.push_back(jitter_note);
  return plan;
}

}  // namespace dtsim
