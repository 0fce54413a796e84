// See zero.hpp.
#include "sim/strategies/zero.hpp"

#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/sharded_memory.hpp"
#include "sim/strategies/sharded_run.hpp"
#include "sim/strategies/sharding_options.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/strategies/zero3_coordinator.hpp"
#include "sim/strategies/zero3_gathers.hpp"
#include "sim/strategies/zero_buckets.hpp"
#include "sim/strategies/zero_groups.hpp"
#include "sim/strategies/zero_notes.hpp"
#include "sim/strategies/zero_offload.hpp"
#include "sim/strategies/zero_offload_copies.hpp"
#include "sim/strategies/zero_quantized_gradients.hpp"
#include "sim/strategies/zero_tally.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim {

Plan build_zero_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                     const CollectiveOptions& collectives)
{
  const ZeroOptions opt = parse_zero_options(scenario);
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  plan.warmup_iterations = warmup;
  const int n = static_cast<int>(plan.ranks.size());
  const int M = scenario.training.batch.accumulation;
  const double micro = static_cast<double>(scenario.training.batch_per_gpu);
  const MemoryRules mem = memory_rules(scenario);
  // Per layer, recomputation in backward.
  const LayerTimes once = layer_times(model, scenario, topology.gpu, micro, opt.half_efficiency_samples);
  const LayerTimes mt = with_recomputation(model, once, scenario.training.recomputation);
  const std::size_t L = model.layers.size();
  const std::vector<double>& fwd = mt.fwd;
  const std::vector<double>& bwd = mt.bwd;
  const double compute_s = mt.fwd_total() + mt.bwd_total();
  const bool half = scenario.training.precision == Precision::Fp16 || scenario.training.precision == Precision::Bf16;
  const double model_bytes = half ? 2.0 : 4.0;
  const double grad_elem = gradient_bytes_per_element(scenario.training.precision);
  const double params = static_cast<double>(model.params());
  const bool distributed = n > 1;
  // The process groups (zero_groups.hpp); qgZ only across nodes (stage3.py __avg_scatter_grads:
  // num_nodes > 1; on one node DeepSpeed reduce-scatters).
  const ZeroGroups process_groups = zero_groups(scenario, opt, n, processes_per_node(topology, plan.ranks));
  const int S = process_groups.shard_size, H = process_groups.secondary_size, per_node = process_groups.per_node;
  const auto& all = process_groups.all;
  const auto& shard = process_groups.shard;
  const auto& secondary = process_groups.secondary;
  const auto& replicas = process_groups.replicas;
  const bool qgz = opt.quantized_gradients && opt.stage == 3 && n > per_node;

  ShardedRun run(plan, topology, collectives);
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks),
                                         host_extras(topology, plan.ranks, compute_s > 0 ? micro / compute_s : 0.0));
  run.add_loaders(loader, [n] {
    std::vector<std::vector<int>> one_each(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      one_each[static_cast<std::size_t>(r)] = {r};
    return one_each;
  }());
  const bool add_optimizer = scenario.training.compute.source == ComputeSpec::Source::Flops;
  const double optimizer_s = add_optimizer && !opt.offload_optimizer ? optimizer_seconds(params / S, mem, half, topology.gpu) : 0.0;
  // ZeRO-Offload (zero_offload.hpp): the step on the host's cores instead, the GPU idle meanwhile.
  const int node_ranks = processes_per_node(topology, plan.ranks);
  const double host_step_s = opt.offload_optimizer ? cpu_step_seconds(params / S, cpu_step_bytes_per_element(mem.optimizer_bytes, model_bytes),
                                                                       node_ranks, opt.offload_threads, topology.host)
                                                   : 0.0;
  if (opt.offload_optimizer && !(topology.host.memory_bytes_per_s_per_socket > 0))
    scenario.strategy_options().at("offload_optimizer").fail(
        "expected a cluster whose host gives memory_gbytes_per_s_per_socket (the CPU step of ZeRO-Offload is bound by it)");

  // Per-iteration figures, tallied while the first iteration is built (zero_tally.hpp).
  ZeroTally tally(run, n);
  // The gradient buckets, and the passes over each before its collective (zero_buckets.hpp).
  const ZeroBuckets zb = zero_buckets(scenario, model, opt, grad_elem, n, S, qgz, topology.gpu);
  const std::vector<Bucket>& buckets = zb.buckets;
  double bucket_copies_s = 0;  // per iteration: on the compute stream (stages 1-2), beside it (stage 3)
  const auto copy_into_bucket = [&](std::size_t k) {
    if (zb.copy_s[k] > 0)
      run.compute_all(zb.copy_s[k], fmt::format("copy gradients into bucket {}", k), TaskCategory::BucketCopy);
    bucket_copies_s += tally.first_iteration() ? zb.copy_s[k] : 0.0;
  };
  // Stages 1-2: without use_multi_rank_bucket_allreduce each bucket's slice is reduced to its owner.
  const bool reduce_to_owners = opt.stage < 3 && opt.reduce_scatter && !opt.multi_rank_bucket_allreduce;
  const auto flatten_bucket = [&](std::size_t k, const std::string& at) {
    if (zb.flatten_s[k] <= 0)
      return;
    run.stream_kernel(ShardedRun::Stream::Shard, zb.flatten_s[k], "flatten and divide gradients of bucket " + at, TaskCategory::BucketCopy,
                      {});
    bucket_copies_s += tally.first_iteration() ? zb.flatten_s[k] : 0.0;
  };
  // Stages 1-2: bucket k reduced on the stream, by one AllReduce or a Reduce to each owner of a
  // slice, then offloaded (zero_offload_copies.hpp).
  const auto reduce_bucket = [&](std::size_t k, int m) {
    std::vector<int> done;
    flatten_bucket(k, std::to_string(k));
    if (distributed && !reduce_to_owners)
      done = tally.collective(CollectiveOp::AllReduce, all, buckets[k].bytes, fmt::format("bucket {}", k), "gradients", TaskCategory::AllReduce, {});
    for (const auto& [owner, elems] : distributed && reduce_to_owners ? zb.slices[k] : std::vector<std::pair<int, double>>{})
      done = tally.collective(CollectiveOp::Reduce, all, elems * grad_elem, fmt::format("bucket {} to rank {}", k, owner), "gradients",
                              TaskCategory::Reduce, {}, ShardedRun::Stream::Shard, owner);
    return offload_gradients(tally, opt, done, buckets[k].bytes / grad_elem / n, m, M, grad_elem, fmt::format("bucket {}", k));
  };
  const bool hooks = opt.stage == 2 || opt.overlap_comm;
  // Stages 1-2 gather the updated parameters with one all_gather_into_tensor per parameter group
  // (runtime/utils.py all_gather_dp_groups -> all_gather_into_tensor_dp_groups, whenever torch has
  // all_gather_into_tensor or _all_gather_base: comm/torch.py has_all_gather_into_tensor), none for a
  // data-parallel world of one; dtsim's model is one parameter group. allgather_bucket_size only
  // sizes the pieces of the fallback for torch without either, so DeepSpeed ignores it here: still
  // accepted, it changes nothing.
  const double gather_pieces = 1;
  // Stage 3: which uses of each module gather it, and at which use each gather is issued.
  const std::vector<double> elements = partitioned_elements(model, opt.persistence_threshold);
  // A layer whose forward re-runs whole in backward (full recomputation, or torchtitan's op-level
  // policy, which replays the checkpointed block) is used twice there; "selective" re-runs only the
  // attention core, which has no parameters.
  const ActivationCheckpointing ckpt = scenario.training.recomputation.policy;
  std::vector<bool> recomputed(L, false);
  for (std::size_t i = 0; i < L; ++i)
    recomputed[i] = (ckpt == ActivationCheckpointing::Full || ckpt == ActivationCheckpointing::SelectiveOp) && mt.bwd[i] > once.bwd[i];
  const std::vector<bool> kept = kept_to_backward(model, recomputed, opt.max_reuse_distance);
  const Stage3Fetches fetches = stage3_fetches(elements, kept, opt.prefetch_bucket_elems, opt.max_live_parameters);
  double partitioned = 0;
  std::size_t reused = 0;  // kept by the reuse rule
  for (std::size_t i = 0; i < L; ++i) {
    partitioned += elements[i];
    reused += elements[i] > 0 && kept[i] ? 1 : 0;
  }

  // Stage 3's gathers at each use (zero3_gathers.hpp).
  Zero3Gathers gathers(tally, {.model = model, .opt = opt, .fetches = fetches, .elements = elements, .shard = shard,
                               .secondary = secondary, .gpu = topology.gpu, .shard_size = S, .secondary_size = H,
                               .distributed = distributed, .model_bytes = model_bytes});

  // Stage 3's gradient reduction of bucket `k` in micro-step `m`, once its tensors' gradients are
  // ready: one ReduceScatter (reduce_scatter_coalesced), or qgZ's chain per tensor
  // (zero_quantized_gradients.hpp).
  const std::vector<GradTensor> grad_tensors = gradient_tensors(model);
  const QgzSetup qgz_setup{model, topology.gpu, n, per_node, grad_elem, all, process_groups.inside_nodes, process_groups.across_nodes};
  std::size_t bucket_first_tensor = 0;  // of the next bucket, into grad_tensors
  const auto reduce_stage3_bucket_on_stream = [&](std::size_t k, int m) {
    const Bucket& bucket = buckets[k];
    const std::size_t first = bucket_first_tensor;
    bucket_first_tensor += bucket.tensors;
    run.stream_waits_for_compute(ShardedRun::Stream::Shard);
    if (zb.copy_s[k] > 0)
      run.stream_kernel(ShardedRun::Stream::Shard, zb.copy_s[k], "copy gradients into bucket at " + model.layers[bucket.ready_after_layer].name,
                        TaskCategory::BucketCopy, {});
    bucket_copies_s += tally.first_iteration() ? zb.copy_s[k] : 0.0;
    if (qgz) {
      reduce_quantized(run, tally.collective_fn(), qgz_setup, grad_tensors, first, bucket.tensors);
      return;
    }
    const std::string at = model.layers[bucket.ready_after_layer].name;
    flatten_bucket(k, "at " + at);
    const auto done = offload_gradients(tally, opt,
                                        distributed ? tally.collective(CollectiveOp::ReduceScatter, shard, bucket.bytes,
                                                                       fmt::format("reduce-scatter gradients at {}", at), "gradients",
                                                                       TaskCategory::ReduceScatter, {})
                                                    : std::vector<int>{},
                                        bucket.bytes / grad_elem / S, m, M, grad_elem, at);
    // MiCS: the bucket's gradient shard across the replicas, at the accumulation boundary
    // (mics.py allreduce_mics_shard_grads), after its ReduceScatter, on their process group. It is
    // issued from partition_grads inside stage3.py __reduce_and_partition_ipg_grads's
    // `with stream(reduce_and_partition_stream)` and is synchronous (dist.all_reduce_coalesced,
    // async_op False), so that stream waits for it: the next bucket's copy and ReduceScatter queue
    // behind it, in series on the reduction's stream.
    if (!replicas.empty() && m + 1 == M)
      tally.collective(CollectiveOp::AllReduce, replicas, bucket.bytes / S, fmt::format("all-reduce gradient shards at {} across replicas", at),
                       "gradient shards across replicas", TaskCategory::AllReduce, run.starts_after(done), ShardedRun::Stream::Shard);
  };
  // Without overlap_comm the copy into the bucket, its reduction and what follows it (qgZ's chain,
  // the offload copies, MiCS's AllReduce: all issued under the reduction's stream) run on the compute
  // stream (stage3.py: reduce_and_partition_stream = Stream() if overlap_comm else default_stream()),
  // and the ReduceScatter is synchronous (coalesced_collectives.py reduce_scatter_coalesced:
  // reduce_scatter_fn with async_op=False): backward waits for them, as stages 1-2 wait for their buckets.
  const auto reduce_stage3_bucket = [&](std::size_t k, int m) {
    reduce_stage3_bucket_on_stream(k, m);
    if (!opt.overlap_comm)
      run.wait_for_streams();
  };

  TaskGraph& g = plan.graph;
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", TaskCategory::Marker, {});
  run.start_all(plan.setup_end);
  const int setup_tasks = g.size();
  for (int it = 0; it < iterations; ++it) {
    tally.set_iteration(it);
    if (it == 1)
      g.reserve(setup_tasks + (g.size() - setup_tasks) * iterations);
    g.set_iteration(it);
    for (int m = 0; m < M; ++m) {
      run.load_inputs(micro);
      if (opt.stage == 3 && (distributed || opt.offload_param)) {
        std::size_t use = 0;
        for (std::size_t i = 0; i < L; ++i) {
          if (use < fetches.forward_uses && fetches.uses[use] == i)
            gathers.fetch(use++, m);
          run.compute_all(fwd[i], "forward " + model.layers[i].name, TaskCategory::Forward);
        }
        // The gradient buckets (every tensor's gradient, partitioned or persistent), each
        // reduce-scattered once the layer holding its last tensor is done (stage3.py reduces in the
        // gradient hooks; dtsim's compute is per layer).
        std::size_t next_bucket = 0, ready = 0, issued = 0;  // tensors whose gradients are ready; in buckets issued
        for (std::size_t k = L; k-- > 0;) {
          if (use < fetches.uses.size() && fetches.uses[use] == k)
            gathers.fetch(use++, m);
          run.compute_all(bwd[k], "backward " + model.layers[k].name, TaskCategory::Backward);
          ready += model.layers[k].param_tensors.size();
          for (; next_bucket < buckets.size() && issued + buckets[next_bucket].tensors <= ready; ++next_bucket) {
            issued += buckets[next_bucket].tensors;
            reduce_stage3_bucket(next_bucket, m);
          }
        }
        bucket_first_tensor = 0;
        // independent_gradient_partition_epilogue, after every backward: the host waits for the
        // reduce-and-partition stream (stage3.py), so the next micro-step starts after the reductions.
        if (m + 1 < M)
          run.wait_for_streams();
        continue;
      }
      double f = 0;
      for (double x : fwd)
        f += x;
      run.compute_all(f, "forward", TaskCategory::Forward);
      // Stage 2 reduces every micro-step (its partition needs them); stage 1 at the accumulation
      // boundary only, with or without the hooks (stage_1_and_2.py
      // reduce_ready_partitions_and_remove_grads; engine.py allreduce_gradients).
      // One GPU reduces nothing, but ZeRO-Offload still copies its gradients out as buckets fill.
      const bool reduce_now = (distributed || opt.offload_optimizer) && (opt.stage >= 2 || m + 1 == M);
      // Backward, cut where buckets fill (with the hooks); each bucket's AllReduce after it.
      std::size_t next_layer = L;
      const auto backward_to = [&](std::size_t layer, const std::string& what) {
        double s = 0;
        for (std::size_t i = layer; i < next_layer; ++i)
          s += bwd[i];
        run.compute_all(s, "backward " + what, TaskCategory::Backward);
        next_layer = std::min(next_layer, layer);
      };
      std::vector<std::vector<int>> reduced;
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        if (reduce_now && hooks)
          backward_to(buckets[k].ready_after_layer, fmt::format("to bucket {}", k));
        if (!reduce_now || !hooks)
          continue;
        copy_into_bucket(k);
        run.stream_waits_for_compute(ShardedRun::Stream::Shard);
        reduced.push_back(reduce_bucket(k, m));
        if (!opt.overlap_comm)
          run.wait_for(reduced.back());  // on the compute stream: backward waits for it
      }
      backward_to(0, "rest");
      if (reduce_now && !hooks)
        for (std::size_t k = 0; k < buckets.size(); ++k) {
          copy_into_bucket(k);
          run.stream_waits_for_compute(ShardedRun::Stream::Shard);
          run.wait_for(reduce_bucket(k, m));
        }
      // The epilogue of a backward that reduced (stage_1_and_2.py independent_gradient_partition_epilogue):
      // with overlap_comm the host synchronizes the device before the next micro-step.
      if (reduce_now && opt.overlap_comm && m + 1 < M)
        run.wait_for_streams();
    }
    run.optimizer_step(opt.offload_optimizer ? host_step_s : optimizer_s, opt.offload_optimizer);
    // The updated partition to where the parameters live (zero_offload_copies.hpp).
    offload_updated_parameters(tally, opt, params / S * model_bytes, half);
    if (opt.stage < 3 && distributed)
      for (int k = 0; k < static_cast<int>(gather_pieces); ++k) {
        run.stream_waits_for_compute(ShardedRun::Stream::Shard);
        run.wait_for(tally.collective(CollectiveOp::AllGather, all, params * model_bytes / gather_pieces,
                                      fmt::format("all-gather updated parameters {}", k), "parameters", TaskCategory::AllGather, {}));
      }
    gathers.gather_persistent();
    run.end_iteration(it);
  }
  g.set_iteration(0);

  tally.add_to(plan.comm_per_iteration);
  // The host's step is not the GPU's compute; stages 1-2 copy into the buckets on the compute stream.
  plan.compute_per_iteration_s = compute_s * M + optimizer_s + gathers.dequantize_s() + bucket_copies_s;
  // One GPU: one micro-batch of batch_per_gpu samples, the optimizer over the whole model once per M
  // micro-batches, as the ranks step theirs.
  const LayerTimes one_gpu = with_optimizer_step(mt, scenario, params, topology.gpu);
  plan.single_gpu_iteration_s = one_gpu.fwd_total() + one_gpu.bwd_total() + one_gpu.optimizer_s / M;
  const auto [jitter_note, fold_note] = run.finish(scenario, micro, n, M, n);
  // hpZ's secondary copies: every partitioned parameter's 1/H, from its first release on.
  const double secondary_elements = H < S ? partitioned / H : 0.0;
  plan.memory = sharded_zero_memory(model, scenario, topology.gpu, opt, plan.ranks, S, micro, loader.input_bytes_per_sample,
                                    opt.stage == 3 ? fetches.peak_elements + secondary_elements : 0,
                                    &plan.memory_curve);
  ZeroPlanFacts facts{.gpus = n,
                      .shard = S,
                      .secondary = H,
                      .per_node = per_node,
                      .buckets = buckets.size(),
                      .reduce_to_owners = reduce_to_owners,
                      .hooks = hooks,
                      .gather_pieces = gather_pieces,
                      .fetches = &fetches,
                      .reused = reused,
                      .partitioned = partitioned,
                      .params = params,
                      .secondary_elements = secondary_elements,
                      .quant_group_elements = Zero3Gathers::kQuantGroupElements,
                      .dequantize_s = gathers.dequantize_s(),
                      .qgz = qgz,
                      .gradient_tensors = grad_tensors.size()};
  for (const auto& s : zb.slices)
    facts.reduces += reduce_to_owners ? s.size() : 0;
  for (const auto& t : grad_tensors)
    facts.quantized_tensors += qgz && quantized_path(t, n) ? 1 : 0;
  for (auto& note : zero_plan_notes(opt, facts))
    plan.notes.push_back(std::move(note));
  if (opt.offload_optimizer || opt.offload_param) {
    const double host_bytes = offload_host_bytes(opt, params / S, mem.optimizer_bytes, model_bytes, grad_elem, M);
    plan.host_offload_bytes_per_node = host_bytes * node_ranks;
    plan.notes.push_back(offload_note(opt, host_bytes, node_ranks, host_step_s, topology.host));
  }
  if (!opt.offload_optimizer)
    plan.notes.push_back(optimizer_note(add_optimizer, fmt::format("1/{} partition", S)));
  if (!fold_note.empty())
    plan.notes.push_back(fold_note);
  plan.notes.push_back(jitter_note);
  return plan;
}

}  // namespace dtsim
