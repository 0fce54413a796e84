// See sharded_memory.hpp.
#include "sim/strategies/sharded_memory.hpp"

#include "sim/strategies/fsdp_stream_pools.hpp"
#include "sim/strategies/memory_timeline.hpp"
#include "sim/strategies/zero3_coordinator.hpp"

#include <algorithm>

namespace dtsim {

namespace {

/// DeepSpeed ZeRO-3's optimizer sub-group: the fp32 gradient copy the step makes at once
/// (deepspeed/runtime/zero/config.py, sub_group_size default pp_int(1e9)).
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
  // Per tensor rank: parameters, and their bytes gathered (gathered_bytes: float8 linears at one byte).
  double root = 0, largest = 0, others = 0, root_b = 0, largest_b = 0, others_b = 0;
  for (std::size_t u = 0; u < units.units.size(); ++u) {
    const double p = units.units[u].params / T, b = gathered_bytes(units.units[u], opt) / T;
    if (u == 0) {
      root = p;
      root_b = b;
    } else {
      largest = std::max(largest, p);
      largest_b = std::max(largest_b, b);
      others += p;
      others_b += b;
    }
  }
  root += embedding_whole;
  root_b += embedding_whole * ubytes;
  // Gathered units alive at once: the root, plus two under the limiter (FSDP1 limit_all_gathers,
  // FSDP2's two AllGather outputs; forward_prefetch adds FSDP1's second buffer), or every unit when
  // the parameters stay after forward (shard_grad_op; a smaller re-shard world keeps 1/k of each).
  const bool limited = opt.version == 2 || opt.limit_all_gathers;
  const double in_flight = limited ? (opt.forward_prefetch ? 3 : 2) * largest_b : others_b;
  double gathered = root_b + in_flight;
  if (!opt.reshard_after_forward)
    gathered = root_b + others_b;
  else if (opt.reshard_ranks > 0)
    gathered += others_b / opt.reshard_ranks;
  // Re-sharded after forward, no unit but the root is gathered while the loss runs (the root is
  // kept from forward to backward: FSDP1's root does not free after forward, FSDP2's _lazy_init sets
  // the root's post_forward_mesh_info to None).
  req.extra_bytes_off_at_loss = opt.reshard_after_forward ? in_flight : 0.0;
  // The unit being reduced holds its unsharded gradient (param dtype, cast to the reduce dtype); with
  // no_sync every unsharded gradient stays between micro-steps: FSDP1 in the parameters' dtype, FSDP2
  // upcast to the reduce dtype where it differs (FSDPParam.to_accumulated_grad_if_needed keeps
  // unsharded_accumulated_grad = grad.to(reduce_dtype)).
  // The accumulated ones count as gradients, the one in flight as workspace.
  const double accumulated_bytes = opt.version == 2 ? rbytes : ubytes;
  const bool accumulates_unsharded = opt.no_sync && scenario.training.batch.accumulation > 1;
  req.held_grads_bytes = accumulates_unsharded ? (root + others) * accumulated_bytes : 0.0;
  const double unsharded_grads = accumulates_unsharded ? 0.0 : largest * std::max(ubytes, rbytes);
  // Offloaded, each unit's shard copied in lives on the GPU until its AllGather has run: the two units
  // the limiter lets ahead (the root's may be the largest).
  const double shards_in = opt.cpu_offload ? 2 * std::max(root, largest) / S * ctx.rules.stored_weight_bytes : 0.0;
  req.extra_bytes = gathered + unsharded_grads + shards_in;
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
      // only the partition's gradients reach the step, as at stage 2.
      req.step_grads_share = 1 / N;
      break;
    case 2:  // the flat partition of the gradients
      req.share.grads = 1 / N;
      // Made at the first bucket's reduction (copy_grads_in_partition), kept across micro-steps by
      // the .grad views into it, freed by the step.
      req.grads_persist = scenario.training.batch.accumulation > 1;
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
    }
    if (opt.stage <= 2)
      req.extra_bytes += largest_param_tensor(model, 0, model.layers.size()) * model_bytes;
  }
  // offload_param: the partitioned parameters on the host; the persistent ones (whole on every GPU)
  // stay, in held_weights_bytes.
  if (opt.offload_param)
    req.share.weights = 0;
  return on_each(gpu_memory(model, ctx, req, curve), ranks);
}

}  // namespace dtsim
