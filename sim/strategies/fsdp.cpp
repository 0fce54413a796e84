// See fsdp.hpp.
#include "sim/strategies/fsdp.hpp"

#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/fsdp1_grad_passes.hpp"
#include "sim/strategies/fsdp_cpu_offload.hpp"
#include "sim/strategies/fsdp2_copies.hpp"
#include "sim/strategies/fsdp_groups.hpp"
#include "sim/strategies/fsdp_notes.hpp"
#include "sim/strategies/fsdp_pieces_slowdown.hpp"
#include "sim/strategies/fsdp_unit_tasks.hpp"
#include "sim/strategies/fsdp_units.hpp"
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

namespace dtsim {

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
  TensorParallelOptions tp{T, opt.sequence_parallel, scenario.training.recomputation};
  tp.loss_parallel = opt.loss_parallel;
  tp.gather_per_linear = opt.gather_per_linear;
  tp.chunk_cat_s_per_byte = copy_seconds(1, topology.gpu);  // DTensor's tensor parallelism (megatron_stage.hpp)
  std::vector<std::vector<StagePiece>> pieces;
  double compute_s = 0, chunk_cat_s = 0;
  const StageMarks marks = stage_marks(model);
  for (const auto& seg : su.segments) {
    pieces.push_back(stage_pieces(model, marks, mt, seg.layers, micro, mem.activation_bytes, tp));
    for (const auto& p : pieces.back()) {
      compute_s += p.fwd_s + p.bwd_s + p.recompute_s;
      chunk_cat_s += p.chunk_cat_s;
    }
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

  // Groups of rank indices (fsdp_groups.hpp).
  const int K = opt.reshard_ranks > 0 ? opt.reshard_ranks : S;  // backward AllGather's world
  const FsdpGroups groups = fsdp_groups(D, T, S, K, sharded);
  const auto& shard_groups = groups.shard;
  const auto& back_groups = groups.backward;
  const auto& tp_groups = groups.tensor;

  // Per tensor rank: each unit's parameters, their bytes gathered and reduced (fsdp_units.hpp).
  const FsdpUnitBytes ub = fsdp_unit_bytes(model, su, opt, T, ubytes, rbytes);
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
      ub.params, ub.gather_bytes, {dtype_bytes(opt.sharded_dtype), ubytes, rbytes}, S, K,
      fsdp2_copies && opt.no_sync && M > 1 && opt.reduce_dtype != unsharded_dtype(opt), topology.gpu);
  // FSDP1's casts and divisions of each unit's gradients on its post-backward stream, around the reduction
  // (fsdp1_grad_passes.hpp): over the shard group, or every data rank under NO_SHARD.
  const bool fsdp1_passes = opt.version == 1 && (sharded || !groups.reduce.empty());
  const Fsdp1GradPasses gp =
      fsdp1_passes ? fsdp1_grad_passes(ub.params, {unsharded_dtype(opt), opt.reduce_dtype, opt.sharded_dtype},
                                       sharded ? S : D, sharded ? S : 1, sharded ? D / S : 1, topology.gpu)
                   : Fsdp1GradPasses{};
  // Units in the order their backward begins (the reverse of their last forward segment), root aside.
  const FsdpUnitOrder order = fsdp_unit_order(su);
  const std::vector<int>& first_segment = order.first_segment;
  const std::vector<int>& last_segment = order.last_segment;
  const std::vector<int>& backward_order = order.backward_order;

  // Compute beside the shard group's NCCL kernels runs slower (fsdp_pieces_slowdown.hpp).
  const double memory_bound = memory_bound_share(model, topology.gpu, scenario.training.precision, micro);
  FsdpPiecesSlowdown slowdown;
  if (sharded) {
    FsdpUnitCollectives uc{{}, {}, ub.gather_bytes, ub.reduce_bytes, first_segment, last_segment, gather_backward,
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
  const double shard_params = (static_cast<double>(model.params()) / T + ub.embedding_whole) / S;
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
  // FSDP1's pre-unshard stream (the cast to param_dtype, the copy from the host) runs ahead of the limiter.
  const bool fsdp1_pre_unshard = fsdp1_cast || (opt.version == 1 && offload);
  // Each unit's AllGather behind the rate limiter, and its reduction (fsdp_unit_tasks.hpp).
  FsdpUnitTasks tasks(run,
                      {.opt = opt, .su = su, .groups = groups, .bytes = ub, .copies = gc, .passes = gp, .host = topology.host,
                       .shard_ranks = S, .backward_ranks = K, .node_ranks = node_ranks, .sharded_bytes = sbytes,
                       .sharded = sharded, .limited = limited, .copies_in = copies_in, .fsdp1_cast = fsdp1_cast,
                       .fsdp1_pre_unshard = fsdp1_pre_unshard, .fsdp1_passes = fsdp1_passes},
                      n);

  const int setup_tasks = g.size();
  for (int it = 0; it < iterations; ++it) {
    if (it == 1)
      g.reserve(setup_tasks + (g.size() - setup_tasks) * iterations);
    g.set_iteration(it);
    tasks.set_iteration(it);
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
          gathered[static_cast<std::size_t>(u)] = tasks.gather(u, false, "forward", kept);
      };
      std::vector<int> last_copy_out;  // FSDP2: the forward's last copy-out, per rank
      for (std::size_t s = 0; s < su.segments.size(); ++s) {
        const int u = su.segments[s].unit;
        const auto& name = su.units[static_cast<std::size_t>(u)].name;
        if (unshards && first_segment[static_cast<std::size_t>(u)] == static_cast<int>(s)) {
          gather_forward(u);
          if (opt.version == 1 && opt.forward_prefetch && s + 1 < su.segments.size())
            gather_forward(su.segments[s + 1].unit);
          if (sharded)
            run.wait_for(gathered[static_cast<std::size_t>(u)]);
          if (fsdp2_copies) {
            run.compute_all(gc.copy_out_s[static_cast<std::size_t>(u)], "copy-out " + name, TaskCategory::FsdpCopy);
            last_copy_out = run.compute_last_all();
          }
        }
        run.pieces(pieces[s], false, tp_groups, name);
        if (sharded && u != 0 && opt.reshard_after_forward && last_segment[static_cast<std::size_t>(u)] == static_cast<int>(s))
          tasks.free_after(run.compute_last_all());
      }
      // FSDP2's root post_forward frees the last all-gather result: the copy-in and all-gather streams
      // wait for the event recorded after its copy-out (_fsdp_state.py _post_forward, "[Note:
      // Overlapping all-gather copy-in and all-gather]"), so the backward's first AllGather (the root's
      // prefetch of the last block) runs beside the loss, never before the last block's forward has
      // its parameters (it ran from the copy-out of the block before: helper-58).
      if (fsdp2_copies && sharded && !last_copy_out.empty()) {
        run.stream_waits_for(ShardedRun::Stream::CopyIn, last_copy_out);
        run.stream_waits_for(ShardedRun::Stream::Shard, last_copy_out);
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
        back_gathered[static_cast<std::size_t>(u)] = tasks.gather(u, true, "backward");
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
        tasks.reduce(u, m);
      };
      std::size_t next = 0;  // index into backward_order of the next unit whose backward begins
      for (int s = static_cast<int>(su.segments.size()) - 1; s >= 0; --s) {
        const auto si = static_cast<std::size_t>(s);
        const int u = su.segments[si].unit;
        const auto& name = su.units[static_cast<std::size_t>(u)].name;
        const bool begins = u != 0 && last_segment[static_cast<std::size_t>(u)] == s;
        if (begins) {
          gather_for_backward(next, false);
          if (opt.backward_prefetch == BackwardPrefetch::Pre && opt.version == 1)
            gather_for_backward(next + 1, false);
          if (gather_backward)
            run.wait_for(back_gathered[static_cast<std::size_t>(u)]);
          if (fsdp2_copies && opt.reshard_after_forward)
            run.compute_all(gc.copy_out_s[static_cast<std::size_t>(u)], "copy-out " + name + " (backward)",
                            TaskCategory::FsdpCopyBackward);
          // FSDP2's pre_backward runs unshard, wait_for_unshard and only then _backward_prefetch, and in
          // backward wait_for_unshard makes the AllGather streams wait for this unit's copy-out at once
          // (_fsdp_param_group.py: "in backward, we free the all-gather result immediately after the current
          // copy-out"): the next unit's AllGather queues behind it. (The root's prefetch of the last block,
          // above, waits only for the forward's last copy-out: it may run beside the last block's forward
          // and the loss.)
          if (opt.backward_prefetch == BackwardPrefetch::Pre && opt.version == 2)
            gather_for_backward(next + 1, true);
          ++next;
        }
        run.pieces(pieces[si], true, tp_groups, name);
        const bool ends = first_segment[static_cast<std::size_t>(u)] == s;
        if (!ends || u == 0)
          continue;
        if (gather_backward)
          tasks.free_after(run.compute_last_all());
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

  // Figures of one iteration, per communicator (fsdp_notes.hpp).
  const int syncs = opt.no_sync ? 1 : M;
  const FsdpPlanFacts facts{.data = D, .tensor = T, .shard = S, .backward = K, .ranks = n, .micro_steps = M, .syncs = syncs,
                            .sharded = sharded, .unshards = unshards, .gather_backward = gather_backward, .limited = limited,
                            .kept_across_micro_steps = kept_across_micro_steps, .reduce_bytes = rbytes,
                            .h2d_bytes = tasks.h2d_bytes(), .d2h_bytes = tasks.d2h_bytes(), .units = &ub, .groups = &groups,
                            .pieces = &pieces};
  add_fsdp_comm_per_iteration(opt, facts, plan.comm_per_iteration);
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
                         scenario.training.recomputation);
  plan.single_gpu_iteration_s =
      one_gpu.fwd_total() + one_gpu.bwd_total() +
      (one_gpu.optimizer_s + (shard_params > 0 ? optimizer_s * static_cast<double>(model.params()) / shard_params : 0.0)) / M;
  const auto [jitter_note, fold_note] = run.finish(scenario, micro, D, M, n);
  plan.memory = sharded_fsdp_memory(model, su, scenario, topology.gpu, opt, plan.ranks, T, micro, loader.input_bytes_per_sample,
                                    &plan.memory_curve);
  plan.notes.push_back(fsdp_plan_note(opt, facts));
  if (fsdp2_copies)
    plan.notes.push_back(fsdp2_copies_note(copy_out_s, opt.reshard_after_forward, grad_copy_s, copy_in_s));
  if (fsdp1_cast)
    plan.notes.push_back(fsdp1_cast_note(opt.sharded_dtype, unsharded_dtype(opt), copy_in_s));
  if (grad_pass_s > 0)
    plan.notes.push_back(fsdp1_grad_passes_note(gp, grad_pass_s, sharded && !opt.no_sync && M > 1));
  if (M > 1)
    plan.notes.push_back(fsdp_micro_steps_note(opt, M, scenario.training.host_sync_each_micro_step));
  if (T > 1)
    plan.notes.push_back(fsdp_tensor_parallel_note(opt, T, chunk_cat_s * M));
  if (offload) {
    const double host_bytes = shard_params * fsdp_offload_host_bytes_per_element(sbytes, mem.optimizer_bytes);
    plan.host_offload_bytes_per_node = host_bytes * node_ranks;
    plan.notes.push_back(fsdp_cpu_offload_note(host_bytes, node_ranks, opt.cpu_offload_pinned, opt.cpu_offload_threads, host_step_s,
                                               tasks.h2d_bytes(), tasks.d2h_bytes(), topology.host));
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
