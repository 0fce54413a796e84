// See sharded_memory.hpp.
#include "sim/strategies/sharded_memory.hpp"

#include "sim/strategies/fsdp_stream_pools.hpp"
#include "sim/strategies/memory_timeline.hpp"
#include "sim/strategies/zero3_coordinator.hpp"

#include <algorithm>

namespace dtsim {

namespace {

/// DeepSpeed ZeRO-3's optimizer sub-group: the fp32 gradient copy the step makes at once, and the
/// parameters one optimizer.step() covers (deepspeed/runtime/zero/config.py, sub_group_size default
/// pp_int(1e9)).
constexpr double kZeroSubGroupElems = 1e9;

/// The same memory on each of `ranks` (every rank of a sharded scheme holds the same).
std::vector<GpuMemory> on_each(GpuMemory m, const std::vector<int>& ranks)
{
  std::vector<GpuMemory> out;
  for (int dev : ranks) {
    m.device = dev;
    out.push_back(m);
  }
  return out;
}

/// The elements of DeepSpeed ZeRO-3's persistent parameters (zero3_coordinator.hpp).
double persistent_elements(const Model& model, double threshold)
{
  double n = 0;
  for (const double t : persistent_tensors(model, threshold))
    n += t;
  return n;
}

}  // namespace

std::vector<GpuMemory> sharded_fsdp_memory(const Model& model, const ShardUnits& units, const Scenario& scenario,
                                           const GpuSpec& gpu, const FsdpOptions& opt, const std::vector<int>& ranks,
                                           int tensor, double micro, double input_bytes_per_sample,
                                           std::vector<MemoryPoint>* curve)
{
  const double T = tensor;
  MemoryContext ctx = memory_context(scenario, gpu, tensor, opt.sequence_parallel);
  ctx.autograd.loss_parallel = opt.loss_parallel;
  ctx.autograd.dtensor_tp = true;  // FSDP2 x TP is torchtitan's and KempnerForge's DTensor plan
  ctx.autograd.gather_per_linear = opt.gather_per_linear;
  StageMemoryRequest req;
  req.first = 0;
  req.last = model.layers.size();
  req.micro_batch = micro;
  req.io_bytes = input_bytes_per_sample * micro;
  // The parameters and their gradients stay in the module's own dtype, fp32 unless the module was
  // cast before wrapping (FSDP2's FSDPParam keeps the original dtype; FSDP1's flat parameter too
  // under MixedPrecision); the optimizer's states follow it (zeros_like(param)).
  const double sbytes = dtype_bytes(opt.sharded_dtype);
  ctx.rules.weight_bytes = ctx.rules.stored_weight_bytes = sbytes;
  ctx.rules.grad_bytes = sbytes;
  ctx.rules.optimizer_bytes *= sbytes / 4;
  ctx.rules.state_element_bytes = sbytes;  // and so do the step's temporaries (torch._foreach_sqrt of them)
  // A replicated token embedding (FsdpOptions::replicate_embedding): the (1 - 1/T) of it that the
  // tensor split would have left to the other tensor ranks, in this rank's root too: its shard of
  // `shard` ranks keeps weights, optimizer state, and gradients where they persist.
  const double embedding_whole = opt.replicate_embedding ? embedding_params(model) * (1 - 1 / T) : 0.0;
  const auto add_embedding_shard = [&](GpuMemory& m, double shard) {
    if (opt.cpu_offload)  // its shard on the host with the others
      return;
    const double e = embedding_whole / shard;
    const double grads = req.grads_persist ? e * ctx.rules.grad_bytes : 0.0;
    const double added = e * (ctx.rules.stored_weight_bytes + ctx.rules.optimizer_bytes) + grads;
    m.params += e * ctx.rules.stored_weight_bytes;
    m.optimizer += e * ctx.rules.optimizer_bytes;
    m.grads += grads;
    m.peak_reserved += added;
    m.device_used += added;
    if (curve)
      for (auto& point : *curve) {
        point.weights += e * ctx.rules.stored_weight_bytes;
        point.optimizer += e * ctx.rules.optimizer_bytes;
        point.grads += grads;
      }
  };
  if (!keeps_unsharded_buffers(opt)) {  // a replica per data rank, as DDP keeps it (a tensor rank's share of it)
    req.share = {1 / T, 1 / T, 1 / T};
    req.grads_persist = scenario.training.batch.accumulation > 1;  // accumulated in .grad
    GpuMemory m = gpu_memory(model, ctx, req, curve);
    add_embedding_shard(m, 1);
    return on_each(m, ranks);
  }
  const double S = opt.shard_group;
  // ubytes: the unsharded parameters outside float8 linears and the unsharded gradients' dtype.
  const double ubytes = dtype_bytes(unsharded_dtype(opt)), rbytes = dtype_bytes(opt.reduce_dtype);
  req.share = {1 / (T * S), 1 / (T * S), 1 / (T * S)};
  // The sharded gradients accumulate over micro-steps, unless no_sync leaves them to the last one
  // (the unsharded ones accumulate instead, below).
  req.grads_persist = scenario.training.batch.accumulation > 1 && !opt.no_sync;
  // CPU offload (fsdp_cpu_offload.hpp): the shards, their gradients and the optimizer's states are on the
  // host (and so is the step's work).
  if (opt.cpu_offload) {
    req.share = {0, 0, 0};
    req.grads_persist = false;
  }
  // Per tensor rank: each unit's parameters and their bytes gathered (gathered_bytes: float8 linears at
  // one byte); the root's with a replicated embedding's whole.
  const std::size_t U = units.units.size();
  std::vector<double> P(U), G(U);
  double largest = 0, others_b = 0, largest_b = 0;
  for (std::size_t u = 0; u < U; ++u) {
    P[u] = units.units[u].params / T;
    G[u] = gathered_bytes(units.units[u], opt) / T;
    if (u != 0) {
      largest = std::max(largest, P[u]);
      largest_b = std::max(largest_b, G[u]);
      others_b += G[u];
    }
  }
  P[0] += embedding_whole;
  G[0] += embedding_whole * ubytes;
  const double root = P[0], root_b = G[0];
  // Each layer's unit, and each unit's first layer (its backward ends there).
  const std::size_t n = model.layers.size();
  std::vector<std::size_t> unit_of(n, 0), first_layer(U, n);
  for (const auto& seg : units.segments)
    for (std::size_t k = seg.layers.first; k < seg.layers.last && k < n; ++k) {
      const auto u = static_cast<std::size_t>(seg.unit);
      unit_of[k] = u;
      first_layer[u] = std::min(first_layer[u], k);
    }
  const bool v1 = opt.version == 1;
  const double K = opt.reshard_ranks > 0 ? opt.reshard_ranks : 0;  // FSDP2's smaller re-shard world (int reshard_after_forward)
  // Forward: the root (gathered from its pre-forward to its post-backward: FSDP1's root does not free after
  // forward, FSDP2's _lazy_init sets the root's post_forward_mesh_info to None) and, re-sharded after
  // forward, the units the limiter lets run ahead: two (FSDP1 limit_all_gathers, _runtime_utils.py
  // _unshard's _free_event_queue; FSDP2's two AllGather outputs), forward_prefetch adding FSDP1's
  // next one (_pre_forward_unshard -> _prefetch_handle(FORWARD)); without the limiter the host may
  // gather every unit ahead. Kept after forward (shard_grad_op, reshard_after_forward false): every
  // unit; an int reshard_after_forward keeps 1/K of each.
  const bool limited = opt.version == 2 || opt.limit_all_gathers;
  const double forward_ahead = limited ? (v1 && opt.forward_prefetch ? 3 : 2) * largest_b : others_b;
  const double kept_after_forward = !opt.reshard_after_forward ? others_b : K > 0 ? others_b / K : 0.0;
  const double forward_gathered = root_b + (opt.reshard_after_forward ? forward_ahead : 0.0) + kept_after_forward;
  // Offloaded, each unit's shard copied in lives on the GPU until its AllGather has run: the two units the
  // limiter lets ahead (the root's may be the largest), in forward and, gathered again, in backward.
  const double shards_in = opt.cpu_offload ? 2 * std::max(root, largest) / S * ctx.rules.stored_weight_bytes : 0.0;
  const bool gathers_backward = opt.reshard_after_forward && K == 0;
  // Backward, re-sharded after forward: the unit being differentiated (its pre-backward gathers it, its
  // post-backward frees it) and the one prefetched: FSDP2 prefetches one unit (the next in backward
  // order, from the pre-backward); FSDP1's backward_pre one (_pre_backward_hook -> _prefetch_handle
  // (BACKWARD), a single handle, whatever the limiter, which bounds only forward's run-ahead);
  // backward_post issues the next AllGather after _post_backward_reshard has freed this unit, and none
  // gathers it in the next unit's own pre-backward: one unit at a time.
  const bool prefetches_backward = opt.version == 2 || opt.backward_prefetch == BackwardPrefetch::Pre;
  // Kept after forward, each unit stays gathered until its post-backward frees it (_post_backward_reshard;
  // FSDP2's reshard_after_backward, default True), except FSDP1's in a no_sync micro-step, kept for the
  // next (keeps_gathered_across_micro_steps); the last micro-step frees them, so none reaches the step.
  const int M = scenario.training.batch.accumulation;
  const bool kept_across = keeps_gathered_across_micro_steps(opt, M);
  const bool accumulates_unsharded = opt.no_sync && M > 1;  // no_sync's unsharded gradients, kept between micro-steps
  // The unsharded gradients, alive in backward only: a unit's in the parameters' dtype as autograd
  // produces them, the root's (embedding, final norm, head) from the head's backward to the end of
  // backward, its post-backward running last (FSDP2's in _root_post_backward_final_callback; FSDP1's once
  // its flat parameter's gradient is whole, at the embedding). A unit's post-backward re-shards it first
  // (FSDP1 _post_backward_hook -> _post_backward_reshard, FSDP2 FSDPParamGroup.post_backward -> reshard),
  // then copies its gradients into the reduce dtype: FSDP2 always (_fsdp_collectives.py foreach_reduce
  // allocates reduce_scatter_input in reduce_dtype, and the group keeps it in comm_ctx.reduce_scatter_state
  // through the next unit's backward, until that unit's post_backward waits for it), FSDP1 where the
  // dtypes differ (`flat_param.grad.data = flat_param.grad.to(_reduce_dtype)`, freed by the host once the
  // reduction is issued). Under no_sync the accumulated ones are gradients (held_grads_bytes); these are
  // the new ones. Each unit's last layer in backward takes the larger of its compute and its post-backward.
  const double reduce_copy_bytes = opt.version == 2 || rbytes != ubytes ? rbytes : 0.0;
  req.phased_extra.forward.assign(n, forward_gathered + shards_in);
  // The loss: the root and what stays after forward (the root's pre-backward hook, which gathers or
  // prefetches the last unit, fires once the loss's backward has produced the logits' gradient); no
  // unsharded gradient yet.
  req.phased_extra.loss_forward = req.phased_extra.loss_backward = root_b + kept_after_forward;
  req.phased_extra.backward.assign(n, 0.0);
  std::size_t root_first = n;
  for (std::size_t k = 0; k < n; ++k)
    if (unit_of[k] == 0)
      root_first = std::min(root_first, k);
  const double shards_back = gathers_backward ? shards_in : 0.0;
  double root_grads = 0;          // the root's parameters whose gradients backward has produced
  double previous_reduce = 0;     // FSDP2: the last reduced unit's reduce_scatter_input
  for (std::size_t k = n; k-- > 0;) {
    const std::size_t u = unit_of[k];
    const double own_b = u != 0 ? G[u] : root_b;
    // Non-root units whose backward has not begun: their first layer before this unit's (or this layer).
    const std::size_t before = u == 0 ? k : first_layer[u];
    double pending_b = 0;
    for (std::size_t v = 1; v < U; ++v)
      if (first_layer[v] < before)
        pending_b += G[v];
    // Other non-root units gathered while this unit computes, and once its post-backward has run.
    double others_compute = 0, others_post = 0;
    if (!opt.reshard_after_forward) {
      others_compute = others_post = kept_across ? others_b - (u != 0 ? G[u] : 0.0) : pending_b;
    } else {
      const double kept = K > 0 ? pending_b / K : 0.0;
      others_compute = kept + (prefetches_backward && pending_b > 0 ? largest_b : 0.0);
      // backward_post's prefetch is issued by _post_backward_reshard, right after this unit's free.
      const bool prefetches_post = prefetches_backward || opt.backward_prefetch == BackwardPrefetch::Post;
      others_post = kept + (prefetches_post && pending_b > 0 ? largest_b : 0.0);
    }
    if (u == 0)
      root_grads += static_cast<double>(model.layers[k].params()) / T;
    const bool ends = u == 0 ? k == root_first : k == first_layer[u];  // the unit's post-backward follows
    const double root_so_far = u == 0 && ends ? root : std::min(root_grads, root);
    const double own_grads = u != 0 ? P[u] * ubytes : 0.0;
    // The last reduced unit's reduce_scatter_input exists only in the micro-step that reduces; accumulating,
    // that one has already freed the reduced units' accumulated gradients (at least as large), so the
    // micro-steps before it, where none is reduced, hold more.
    double bytes = (u != 0 ? root_b : 0.0) + own_b + others_compute + own_grads + root_so_far * ubytes +
                   (opt.version == 2 && !accumulates_unsharded ? previous_reduce : 0.0);
    if (ends) {
      const double p = u != 0 ? P[u] : root;
      // Accumulating under no_sync, the new gradients have been added to the accumulated ones (counted
      // as gradients) and freed before the copy (FSDP2 accumulate_unsharded_grad_if_needed at the top of
      // post_backward; FSDP1's hook runs after AccumulateGrad has added them to .grad).
      const double unit_grads = p * ((accumulates_unsharded ? 0.0 : ubytes) + reduce_copy_bytes);
      const double post = (u != 0 ? root_b : 0.0) + (kept_across ? own_b : 0.0) + others_post +
                          (u != 0 ? root_so_far * ubytes : 0.0) + unit_grads;
      bytes = std::max(bytes, post);
      previous_reduce = p * reduce_copy_bytes;
    }
    req.phased_extra.backward[k] = bytes + shards_back;
  }
  // The optimizer step: every unit re-sharded by its post-backward (FSDP1 _post_backward_reshard and
  // _post_backward_final_callback's _catch_all_reshard; FSDP2's final callback runs post_backward on every
  // group, the root's too), every unsharded gradient freed: only cuBLAS's workspaces.
  req.phased_extra.step = 0;
  // The accumulated unsharded gradients under no_sync (counted as gradients): FSDP1 in the parameters'
  // dtype, FSDP2 upcast to the reduce dtype where it differs (FSDPParam.to_accumulated_grad_if_needed
  // keeps unsharded_accumulated_grad = grad.to(reduce_dtype)).
  const double accumulated_bytes = opt.version == 2 ? rbytes : ubytes;
  double all_units = 0;
  for (const double p : P)
    all_units += p;
  req.held_grads_bytes = accumulates_unsharded ? all_units * accumulated_bytes : 0.0;
  GpuMemory m = gpu_memory(model, ctx, req, curve);
  add_embedding_shard(m, S);
  if (opt.version == 2 && S > 1) {
    // FSDP2's side streams keep their own blocks (fsdp_stream_pools.hpp): the sharded gradients
    // live in the reduce-scatter stream's pool (not the compute stream's, where the walk counted
    // those alive at the peak), the AllGather outputs in the copy-in stream's. A shard group of one
    // rank keeps nothing there, and its gradients stay where the walk counted them (they were
    // taken out, which left reserved 29 GiB below allocated for Llama 3 8B). no_sync's accumulated
    // unsharded gradients stay on the compute stream.
    ShardUnits whole = units;
    whole.units.front().params += embedding_whole * T;  // per tensor rank: params / T
    std::vector<double> gathered_per_param;  // bytes a unit's AllGather output holds per parameter
    for (const auto& u : whole.units)
      gathered_per_param.push_back(u.params > 0 ? gathered_bytes(u, opt) / u.params : ubytes);
    const Fsdp2StreamPools pools =
        fsdp2_stream_pools(whole, T, S, gathered_per_param, rbytes, ctx.rules.grad_bytes, opt.cpu_offload);
    const double moved = pools.total() - (m.grads - (peak_at_optimizer_step(m) ? 0.0 : req.held_grads_bytes));
    m.peak_reserved += moved;
    m.device_used += moved;
  }
  return on_each(m, ranks);
}

std::vector<GpuMemory> sharded_zero_memory(const Model& model, const Scenario& scenario, const GpuSpec& gpu,
                                           const ZeroOptions& opt, const std::vector<int>& ranks, int partitions,
                                           double micro, double input_bytes_per_sample, double gathered,
                                           std::vector<MemoryPoint>* curve)
{
  const double N = static_cast<double>(partitions);
  const double params = static_cast<double>(model.params());
  MemoryContext ctx = memory_context(scenario, gpu);
  // DeepSpeed builds the optimizer its config names: "adam" / "adamw" is its FusedAdam (engine.py
  // _configure_basic_optimizer: `from deepspeed.ops.adam import FusedAdam`, unless torch_adam), a
  // multi-tensor kernel without step temporaries; DeepSpeedCPUAdam under offload_optimizer. A
  // torch variant named in training.optimizer (-foreach, -for-loop) keeps its own rule.
  const std::string& optimizer = scenario.training.optimizer;
  if (optimizer.find("-foreach") == std::string::npos && optimizer.find("-for-loop") == std::string::npos)
    ctx.rules.step = OptimizerStep::Fused;
  const Precision p = scenario.training.precision;
  const bool half = p == Precision::Fp16 || p == Precision::Bf16;
  const double model_bytes = half ? 2 : 4;  // the module's own weights and gradients
  // The optimizer's partition: fp32 master weights (half precision only) and the optimizer states.
  const double states = ctx.rules.optimizer_bytes;
  ctx.rules.optimizer_bytes = (half ? 4 : 0) + states;
  ctx.rules.weight_bytes = ctx.rules.stored_weight_bytes = model_bytes;
  StageMemoryRequest req;
  req.first = 0;
  req.last = model.layers.size();
  req.micro_batch = micro;
  req.io_bytes = input_bytes_per_sample * micro;
  req.share = {1, 1, 1 / N};
  // DeepSpeed's IPG buffer: reduce_bucket_size elements whatever the model's size
  // (stage_1_and_2.py setup_buckets: torch.empty(int(self.reduce_bucket_size), dtype=self.dtype);
  // stage3.py _setup_for_real_optimizer: torch.empty(self.reduce_bucket_size, ...)).
  const double bucket = opt.reduce_bucket_elems * model_bytes;
  // The gradients DeepSpeed keeps are in the module's dtype (stage_1_and_2.py: grads_in_partition of
  // self.dtype; stage3.py: grad_partitions_flat_buffer of gradient_accumulation_dtype, which
  // engine.py get_data_types makes the model's dtype under ZeRO unless data_types.grad_accum_dtype
  // is set). The step then flattens each parameter group's partition and casts it to the fp32 copy
  // the optimizer reads (step(): flatten(averaged_gradients[i]).to(fp32); stage 3 per sub-group of
  // at most sub_group_size = 1e9 elements, config.py), freed after the group's step. DeepSpeed's own
  // estimator counts the same 2 + 4 bytes of gradients per partitioned parameter (18/N above).
  const double step_group = opt.stage == 3 ? std::min(params / N, kZeroSubGroupElems) : params / N;
  req.step_cast_bytes = half ? step_group * model_bytes : 0;  // an fp32 model's flat copy is the one the step reads
  req.step_grad_bytes = step_group * 4;
  // Stages 1-2 free the partition's gradients once cast, before the step (stage_1_and_2.py step():
  // `single_grad_partition = flat_grad_partition.to(fp32)`, `del flat_grad_partition`,
  // free_grad_in_param_list(params_in_partition), averaged_gradients[i] = None, then
  // _optimizer_step(i)): the partition and its flattened copy exist beside the fp32 copy while it is
  // cast, the fp32 copy alone during the step.
  if (opt.stage < 3) {
    req.step_grads_share = 0;
    req.step_cast_bytes = step_group * model_bytes * (half ? 2 : 1);
  }
  // Stage 3 steps one sub-group at a time (stage3.py step(): _optimizer_step(sub_group_id) per
  // sub-group), so a torch foreach optimizer's temporary covers one sub-group; stages 1 and 2 step
  // the whole partition of a parameter group at once (stage_1_and_2.py step(): self.optimizer.step()).
  req.step_group_elems = opt.stage == 3 ? kZeroSubGroupElems : 0;
  ctx.rules.grad_bytes = model_bytes;
  // The IPG buffers (contiguous_gradients, default true): one bucket of gradients, two with
  // overlap_comm, allocated by the optimizer's backward() and released at the end of backward
  // (_release_ipg_buffers), at stages 1 and 2.
  req.grad_buckets_bytes = bucket * (opt.overlap_comm ? 2 : 1);
  req.buckets_in_backward_only = opt.stage < 3;
  switch (opt.stage) {
    case 1:  // the full gradients, as autograd produces them; reduced at the accumulation boundary only
      req.grads_persist = scenario.training.batch.accumulation > 1;
      // The reduction copies the partition's gradients into grads_in_partition (stage_1_and_2.py
      // reduce_ipg_grads -> copy_grads_in_partition) and points every .grad at a bucket or that
      // partition, freeing autograd's; the epilogue drops every .grad (_clear_param_grad_only) and the
      // step frees what is outside the partition (step(): free_grad_in_param_list(params_not_in_partition)):
      // only the partition's gradients reach the step, as at stage 2 (step_cast_bytes above).
      break;
    case 2:  // the flat partition of the gradients
      req.share.grads = 1 / N;
      // Made at the first bucket's reduction (copy_grads_in_partition), freed by the step.
      // Accumulating, the first micro-step's partition is kept by the epilogue's all_grad_tensors
      // (views into it) while _release_ipg_buffers drops grads_in_partition; each later micro-step's
      // first reduction allocates a new one (copy_grads_in_partition: torch.empty(total_size)), which
      // the epilogue adds into the kept one (independent_gradient_partition_epilogue:
      // accumulated_grad.add_(new_avg_grad)) and then frees: from the first bucket on, both.
      if (scenario.training.batch.accumulation > 1)
        req.held_grads_bytes = params * model_bytes / N;
      req.grads_whole_after_params = std::min(params, opt.reduce_bucket_elems);
      break;
    default:  // partitioned weights and gradients (allocated at init), the parameters gathered
      req.share = {1 / N, 1 / N, 1 / N};
      req.grads_persist = true;
      req.grad_buckets_bytes = bucket;  // stage3.py's __ipg_bucket_flat_buffer, made at init
      req.extra_bytes = gathered * model_bytes;
      // The persistent parameters, whole on every GPU in the module's dtype: never released by the
      // coordinator (partitioned_param_coordinator.py releases only `not param.ds_persist`), gathered
      // again after each step (stage3.py _post_step), beside their partition in `share.weights`.
      req.held_weights_bytes = persistent_elements(model, opt.persistence_threshold) * model_bytes;
      break;
  }
  // ZeRO-Offload (zero_offload.hpp): the fp32 master weights, the optimizer states and the fp32
  // gradient partition the step reads are on the host. Stages 2-3 keep no gradient partition on the
  // GPU either (stage_1_and_2.py copy_grads_in_partition returns before allocating
  // grads_in_partition and frees each .grad once copied; stage3.py's grad_partitions_flat_buffer is
  // on the host), but stages 1 and 2 hold temp_grad_buffer_for_gpu_offload, as large as the largest
  // parameter tensor, for the accumulation through the GPU (stage_1_and_2.py allocates it in
  // __init__ under `if self.cpu_offload`, whatever partition_gradients says).
  if (opt.offload_optimizer) {
    ctx.rules.optimizer_bytes = 0;
    req.share.optimizer = 0;  // nor the GPU step's temporaries
    req.step_cast_bytes = req.step_grad_bytes = 0;
    // Stage 1 too: its partition's gradients go to the host's fp32 buffer as they are reduced
    // (copy_grads_in_partition returns before grads_in_partition) and the epilogue drops every .grad.
    req.step_grads_share = 0;
    if (opt.stage >= 2) {
      req.share.grads = 0;
      req.grads_persist = false;
      req.held_grads_bytes = 0;
    }
    if (opt.stage <= 2)
      req.extra_bytes += largest_param_tensor(model, 0, model.layers.size()) * model_bytes;
  }
  // offload_param: the partitioned parameters on the host; the persistent ones (whole on every GPU)
  // stay, in held_weights_bytes.
  if (opt.offload_param)
    req.share.weights = 0;
  // The flattened copy of a bucket being reduced (zero_buckets.cpp: stage_1_and_2.py allreduce_bucket's
  // self.flatten(bucket), stage3.py's coalesced_collectives.py reduce_scatter_coalesced's torch.cat),
  // one bucket beside the IPG buffer from backward's first reduction on: stage 2 and stage 3 every
  // micro-step, stage 1 as its buckets fill under overlap_comm (without it, after backward, where the
  // last layer's backward holds more). A single GPU reduces nothing.
  if (N > 1 && (opt.stage >= 2 || opt.overlap_comm)) {
    const std::size_t L = model.layers.size();
    req.phased_extra.backward.assign(L, 0.0);
    double produced = 0;
    for (std::size_t k = L; k-- > 0;) {
      if (produced >= std::min(params, opt.reduce_bucket_elems))
        req.phased_extra.backward[k] = bucket;
      produced += static_cast<double>(model.layers[k].params());
    }
  }
  return on_each(gpu_memory(model, ctx, req, curve), ranks);
}

}  // namespace dtsim
