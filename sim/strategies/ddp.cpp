#include "sim/strategies/ddp.hpp"

#include "sim/scenario/strategy_members.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/strategies/buckets.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/interference.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/memory_timeline.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <numeric>

namespace dtsim {

DdpOptions parse_ddp_options(const JsonReader& strategy)
{
  reject_unknown_strategy_members(strategy);
  DdpOptions o;
  o.bucket_cap_mb = strategy.positive_or("bucket_cap_mb", o.bucket_cap_mb);
  o.first_bucket_mb = strategy.positive_or("first_bucket_mb", o.first_bucket_mb);
  o.broadcast_buffers = strategy.bool_or("broadcast_buffers", o.broadcast_buffers);
  // gradient_accumulation is read with the batch (sim/scenario: training.micro_batch and global_batch).
  return o;
}

double gradient_bytes_per_element(Precision precision)
{
  return precision == Precision::Fp16 || precision == Precision::Bf16 ? 2.0 : 4.0;
}

double megatron_gradient_bytes_per_element(Precision precision)
{
  return precision == Precision::Bf16 ? 4.0 : gradient_bytes_per_element(precision);
}

std::vector<int> pick_ranks(const Scenario& scenario, const Topology& topology)
{
  const auto& gpus = topology.gpus();
  if (static_cast<std::size_t>(scenario.gpus) > gpus.size())
    scenario.reader().at("gpus").fail(fmt::format("expected at most {} GPUs (the cluster has {} nodes x {} GPUs), got {}",
                                                  gpus.size(), topology.nodes, topology.gpus_per_node, scenario.gpus));
  return {gpus.begin(), gpus.begin() + scenario.gpus};
}

namespace {

// DDP's own work on the GPU, without gradient_as_bucket_view (PyTorch's default): each gradient is
// copied into its bucket as it becomes ready, scaled by 1/world_size in the same kernel
// (mul_out: one read, one write), and copied back into .grad once every bucket is reduced (one
// read, one write). Both are memory-bound; a copy kernel reaches roughly 80-90% of the HBM
// datasheet bandwidth (STREAM-like copy), taken here as 85%. One GPU alone is not wrapped in DDP.
constexpr double kCopyBandwidthFraction = 0.85;

struct BucketCopies {
  std::vector<double> in_s;  ///< per bucket, during backward
  double out_s = 0;          ///< all buckets, after the last AllReduce
  double total_s() const { return std::accumulate(in_s.begin(), in_s.end(), out_s); }
};

BucketCopies bucket_copies(const std::vector<Bucket>& buckets, const GpuSpec& gpu, std::size_t ranks)
{
  BucketCopies c;
  if (ranks < 2 || !(gpu.memory_bandwidth > 0))
    return c;
  const double rate = gpu.memory_bandwidth * kCopyBandwidthFraction;
  for (const Bucket& b : buckets) {
    c.in_s.push_back(2 * b.bytes / rate);
    c.out_s += 2 * b.bytes / rate;
  }
  return c;
}

// Most tasks the buckets' AllReduces may add to a plan, over all its iterations. DDP does not fold
// ranks (simulation.ranks; only the sharded and hybrid builders have the symmetry), so each bucket is
// every rank's ring steps (transfers and their start-up delays): Llama 3 405B on 32 V100 of 4 DGX-1
// (r32.json, 884 buckets, 4 iterations) is 2.2e7 such tasks, 13.1 s and 4.43 GB on this project's
// 2-core machine (about 200 bytes a task; 16 GPUs: 2.1 s and 0.58 GB); 128 GPUs outgrew 8 GB in 28 s
// and explain's 1024 GPUs 8 GB in 17 s (std::bad_alloc under a 6 GB cap); 4,001 buckets of 100,000
// layers on 32 GPUs (2.48e7) took 5.36 GB and 18 s. 2.3e7 keeps a plan within about 5 GB and 20 s,
// every shipped DDP scenario and validation row far below it.
constexpr double kMaxBucketCollectiveTasks = 2.3e7;

// Backward of one micro-step on one rank, cut where buckets become ready. seg[k] is the task after
// which bucket k's gradients are all ready; the last element closes backward.
struct Backward {
  std::vector<int> bucket_ready;
  int end = -1;
};

Backward add_backward(TaskGraph& g, int device, const LayerTimes& times, const std::vector<Bucket>& buckets,
                      const std::vector<double>& copy_in_s, int after, int rank)
{
  Backward b;
  std::size_t next_layer = times.bwd.size();  // layers [0, next_layer) still to run
  int last = after;
  auto run_down_to = [&](std::size_t layer, double extra_s, const std::string& what) {
    if (layer >= next_layer && !(extra_s > 0))
      return;
    const double seconds = layer >= next_layer ? 0.0
                                               : std::accumulate(times.bwd.begin() + static_cast<long>(layer),
                                                                 times.bwd.begin() + static_cast<long>(next_layer), 0.0);
    last = g.add_compute(device, seconds + extra_s, fmt::format("backward {} (rank {})", what, rank), TaskCategory::Backward, {last});
    next_layer = std::min(layer, next_layer);
  };
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    run_down_to(buckets[k].ready_after_layer, k < copy_in_s.size() ? copy_in_s[k] : 0.0, fmt::format("to bucket {}", k));
    b.bucket_ready.push_back(last);
  }
  run_down_to(0, 0.0, "rest");
  b.end = last;
  return b;
}

/// Backward kernels that run beside the buckets' AllReduces take longer (interference.hpp): the
/// same extra seconds on every rank's segments, summed into the plan once per iteration.
void slow_backward_beside_nccl(TaskGraph& g, const std::vector<Backward>& bwd, const std::vector<InflightCollective>& inflight,
                               const GpuSpec& gpu, double memory_bound, bool count, Plan& plan)
{
  if (bwd.empty() || inflight.empty())
    return;
  auto segments_of = [&](const Backward& b) {
    std::vector<int> ids = b.bucket_ready;
    ids.push_back(b.end);
    return ids;
  };
  const std::vector<int> first = segments_of(bwd[0]);
  std::vector<double> seconds(first.size(), 0.0);
  for (std::size_t j = 0; j < first.size(); ++j)
    seconds[j] = j > 0 && first[j] == first[j - 1] ? 0.0 : g[first[j]].seconds;
  const std::vector<double> extra = backward_slowdown(seconds, inflight, gpu, memory_bound);
  for (const Backward& b : bwd) {
    const std::vector<int> ids = segments_of(b);
    for (std::size_t j = 0; j < ids.size(); ++j)
      if (extra[j] > 0 && (j == 0 || ids[j] != ids[j - 1]))
        g[ids[j]].seconds += extra[j];
  }
  if (count) {
    double total = 0;
    for (double e : extra)
      total += e;
    plan.nccl_slowdown_per_iteration_s += total;
  }
}

}  // namespace

Plan build_ddp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                    const CollectiveOptions& collectives)
{
  DdpOptions opt = parse_ddp_options(scenario.strategy_options());
  opt.gradient_accumulation = scenario.training.batch.accumulation;
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  plan.warmup_iterations = warmup;
  const auto n = plan.ranks.size();
  const double batch = static_cast<double>(scenario.training.batch_per_gpu);
  // Recomputation (training.activation_checkpointing) runs in each layer's backward; each replica
  // steps the optimizer over the whole model.
  const LayerTimes times = with_optimizer_step(
      with_recomputation(model, layer_times(model, scenario, topology.gpu, batch, half_efficiency_samples_of(scenario.strategy_options())),
                         scenario.training.recomputation),
      scenario, static_cast<double>(model.params()), topology.gpu);
  const HostExtras extras = host_extras(topology, plan.ranks, times.step() > 0 ? batch / times.step() : 0.0);
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks), extras);
  std::vector<LoaderLane> lanes;
  for (std::size_t r = 0; r < n; ++r) {
    const int cpu = host_cpu_of(topology, plan.ranks[r]);
    lanes.emplace_back(loader, cpu >= 0 ? cpu : plan.ranks[r], fmt::format("rank {}'s DataLoader", r));
  }
  const double grad_elem = gradient_bytes_per_element(scenario.training.precision);
  const auto buckets = assign_buckets(model, grad_elem, opt.first_bucket_mb * kMiB, opt.bucket_cap_mb * kMiB);
  // Each bucket is an AllReduce over every rank (bucket_cap_mb 0.001 on 100,000 layers: 100,000 of
  // them, std::bad_alloc): at most kMaxBucketsPerIteration (buckets.hpp), as ZeRO's and Megatron's.
  // A bucket is closed once it reaches the cap, so all but the first and the last hold at least
  // bucket_cap_mb: gradient bytes / (bound - 2) keeps any model within it. Only when there is more
  // than one rank: one GPU is not wrapped in DDP.
  if (n > 1) {
    const double grad_bytes = static_cast<double>(model.params()) * grad_elem;
    check_buckets_per_iteration(scenario.strategy_options(), "bucket_cap_mb", static_cast<double>(buckets.size()),
                                opt.bucket_cap_mb, grad_bytes / (kMaxBucketsPerIteration - 2) / kMiB, "MB",
                                static_cast<double>(model.params()));
  }
  const double buffer_bytes = static_cast<double>(model.buffer_elems()) * 4.0;
  const bool sync_buffers = opt.broadcast_buffers && buffer_bytes > 0 && n > 1;
  const BucketCopies copies = bucket_copies(buckets, topology.gpu, n);
  const double memory_bound = memory_bound_share(model, topology.gpu, scenario.training.precision, batch);
  int nccl_channels = 0;  // most channels (CTAs) a bucket's AllReduce runs on

  plan.single_gpu_iteration_s = times.step();
  plan.compute_per_iteration_s =
      (times.fwd_total() + times.bwd_total()) * opt.gradient_accumulation + times.optimizer_s + copies.total_s();
  plan.samples_per_iteration = batch * static_cast<double>(n) * opt.gradient_accumulation;
  if (sync_buffers)
    plan.comm_per_iteration.push_back({"buffers", "broadcast", buffer_bytes});
  if (n > 1) {
    for (std::size_t k = 0; k < buckets.size(); ++k)
      plan.comm_per_iteration.push_back({fmt::format("bucket {}", k), "all_reduce", buckets[k].bytes});
  }

  TaskGraph& g = plan.graph;
  std::vector<std::vector<int>> ready(n);  // per rank: what the next step waits for
  if (n > 1) {
    CollectiveCall params{CollectiveOp::Broadcast, plan.ranks,
                          static_cast<double>(model.params()) * 4.0 + buffer_bytes, 0, "parameters", TaskCategory::Broadcast};
    const auto bc = add_collective(g, topology, params, ready, collectives);
    for (std::size_t r = 0; r < n; ++r)
      ready[r] = {bc.done[r]};
  }
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", TaskCategory::Marker, [&] {
    std::vector<int> all;
    for (const auto& r : ready)
      all.insert(all.end(), r.begin(), r.end());
    return all;
  }());

  const int setup_tasks = g.size();
  double bucket_tasks = 0;  // tasks the first iteration's buckets' AllReduces added
  for (int it = 0; it < iterations; ++it) {
    // Every iteration adds as many tasks as the first: room for all of them at once (a plan of
    // millions of tasks would otherwise be moved each time the vector doubles).
    if (it == 1)
      g.reserve(setup_tasks + (g.size() - setup_tasks) * iterations);
    g.set_iteration(it);
    for (int micro = 0; micro < opt.gradient_accumulation; ++micro) {
      const bool sync = micro + 1 == opt.gradient_accumulation && n > 1;
      if (sync_buffers && micro == 0) {
        CollectiveCall call{CollectiveOp::Broadcast, plan.ranks, buffer_bytes, 0, "buffers", TaskCategory::Broadcast};
        const auto bc = add_collective(g, topology, call, ready, collectives);
        for (std::size_t r = 0; r < n; ++r)
          ready[r] = {bc.done[r]};
      }
      for (std::size_t r = 0; r < n; ++r) {  // each process loads and copies its own batch
        const int loaded = lanes[r].load(g, batch, ready[r]);
        if (loaded < 0)
          continue;
        std::vector<int> after = ready[r];
        after.push_back(loaded);
        const int copy = add_input_copy(g, topology, loader, plan.ranks[r], batch, after,
                                        fmt::format("input batch host -> rank {}", r));
        ready[r] = copy >= 0 ? std::vector<int>{copy} : after;
      }
      std::vector<Backward> bwd(n);
      for (std::size_t r = 0; r < n; ++r) {
        const int fwd = g.add_compute(plan.ranks[r], times.fwd_total(), fmt::format("forward (rank {})", r), TaskCategory::Forward,
                                      ready[r]);
        bwd[r] = add_backward(g, plan.ranks[r], times, sync ? buckets : std::vector<Bucket>{}, copies.in_s, fwd,
                              static_cast<int>(r));
        ready[r] = {bwd[r].end};
      }
      if (!sync)
        continue;
      std::vector<int> previous(n, -1);  // the previous bucket's AllReduce on this rank (one NCCL stream)
      std::vector<InflightCollective> inflight;
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        g.set_group(static_cast<int>(k));
        std::vector<std::vector<int>> start(n);
        for (std::size_t r = 0; r < n; ++r) {
          start[r] = {bwd[r].bucket_ready[k]};
          if (previous[r] >= 0)
            start[r].push_back(previous[r]);
        }
        CollectiveCall call{CollectiveOp::AllReduce, plan.ranks, buckets[k].bytes, 0, fmt::format("bucket {}", k),
                            TaskCategory::AllReduce};
        const int tasks_before = g.size();
        const CollectiveTasks ar = add_collective(g, topology, call, start, collectives);
        if (it == 0) {
          // The first iteration's buckets, times the iterations, are what the plan will hold (every
          // iteration adds the same): refused as soon as the part built so far says it is too many,
          // with the whole estimated from the buckets built so far.
          // The first bucket can have more channels (so tasks) than the others: 4 times the average in
          // 100,000 layers at bucket_cap_mb 0.0932. A plan is refused on its estimate alone only when
          // that is 8 times the bound (explain's 1024 GPUs of Llama 3 405B: 18 times, 1.9 s, 0.34 GB).
          bucket_tasks += g.size() - tasks_before;
          const double so_far = bucket_tasks * static_cast<double>(iterations);
          const double estimate = so_far / static_cast<double>(k + 1) * static_cast<double>(buckets.size());
          if (so_far > kMaxBucketCollectiveTasks || (k == 0 && estimate > 8 * kMaxBucketCollectiveTasks)) {
            const double per_bucket = bucket_tasks / static_cast<double>(k + 1);
            scenario.reader().at("gpus").fail(fmt::format(
                "expected fewer GPUs for DDP on this model: its {} gradient buckets are each an AllReduce over the {} "
                "GPUs, about {:.3g} simulated tasks each, {:.3g} over {} iterations, more than the {:.3g} dtsim "
                "builds (about 200 bytes a task; DDP does not fold ranks): fewer GPUs, a larger strategy.bucket_cap_mb "
                "(fewer buckets; each holds at least one tensor) or strategy fsdp, zero or hybrid",
                buckets.size(), n, per_bucket, per_bucket * static_cast<double>(buckets.size()) * iterations, iterations,
                kMaxBucketCollectiveTasks));
          }
        }
        previous = ar.done;
        nccl_channels = std::max(nccl_channels, ar.channels);
        inflight.push_back({ar.predicted_us * 1e-6, 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * buckets[k].bytes,
                            ar.channels});
      }
      g.set_group(-1);
      slow_backward_beside_nccl(g, bwd, inflight, topology.gpu, memory_bound, it == 0, plan);
      for (std::size_t r = 0; r < n; ++r) {
        ready[r] = {bwd[r].end, previous[r]};
        if (copies.out_s > 0)
          ready[r] = {g.add_compute(plan.ranks[r], copies.out_s, fmt::format("copy buckets -> gradients (rank {})", r),
                                    TaskCategory::DdpCopy, ready[r])};
      }
    }
    std::vector<int> all;
    for (std::size_t r = 0; r < n; ++r) {
      const std::string name = fmt::format("optimizer step (rank {})", r);
      const int opt_step = times.optimizer_s > 0 ? g.add_compute(plan.ranks[r], times.optimizer_s, name, TaskCategory::Optimizer, ready[r])
                                                 : g.add_delay(plan.ranks[r], 0.0, name, TaskCategory::Optimizer, ready[r]);
      ready[r] = {opt_step};
      all.push_back(opt_step);
    }
    plan.iteration_end.push_back(g.add_delay(plan.ranks[0], 0.0, fmt::format("iteration {} done", it), TaskCategory::Marker, all));
  }
  g.set_iteration(0);
  plan.compute_per_iteration_s += plan.nccl_slowdown_per_iteration_s;

  plan.notes.push_back(!times.note.empty() ? times.note
                                           : fmt::format("compute: {}; {}", describe_compute_source(scenario),
                                                         compute_spread_note(scenario, topology.gpu)));
  if (scenario.training.recomputation.any())
    plan.notes.push_back(checkpointing_note(scenario.training.recomputation));
  if (n > 1)
    plan.notes.push_back(fmt::format("{} gradient buckets ({} MiB cap, first {} MiB), AllReduce one at a time in bucket order",
                                     buckets.size(), opt.bucket_cap_mb, opt.first_bucket_mb));
  else
    plan.notes.push_back("one GPU: no gradient buckets, no communication");
  // Memory: every rank holds the same; one walk (memory_timeline.hpp).
  {
    const MemoryContext mctx = memory_context(scenario, topology.gpu);
    StageMemoryRequest req;
    req.first = 0;
    req.last = model.layers.size();
    req.micro_batch = batch;
    req.grads_persist = opt.gradient_accumulation > 1;  // no_sync micro-steps accumulate into .grad
    // DDP's buckets are flat copies of the gradients (gradient_as_bucket_view=False, the default:
    // torch/nn/parallel/distributed.py; reducer.cpp allocates bucket.gradients once). One GPU is not
    // wrapped in DDP.
    req.grad_buckets_bytes = n > 1 ? params_in(model, 0, model.layers.size()) * mctx.rules.grad_bytes : 0;
    req.io_bytes = loader.input_bytes_per_sample * batch;
    const GpuMemory m = gpu_memory(model, mctx, req, &plan.memory_curve);
    plan.memory_curve_device = plan.ranks.front();
    for (int dev : plan.ranks) {
      plan.memory.push_back(m);
      plan.memory.back().device = dev;
    }
  }
  plan.gpu_memory_bytes = topology.gpu.memory_bytes;
  plan.notes.push_back(loader.describe() + " (one DataLoader per process)");
  plan.input_seconds_per_iteration = loader.batch_seconds(batch) * opt.gradient_accumulation;
  plan.input_in_main_process = loader.workers == 0;
  if (const std::string host = loader.host_note(batch * opt.gradient_accumulation, plan.compute_per_iteration_s);
      !host.empty())
    plan.notes.push_back(host);
  plan.host = loader.host_summary(batch * opt.gradient_accumulation, plan.compute_per_iteration_s);
  if (copies.total_s() > 0)
    plan.notes.push_back(fmt::format("DDP bucket copies: gradients -> buckets (with the 1/{} scaling) during backward and "
                                     "back after the AllReduce, {:.2f} ms per iteration at {:.0f}% of {:.0f} GB/s",
                                     n, copies.total_s() * 1e3, 100 * kCopyBandwidthFraction,
                                     topology.gpu.memory_bandwidth / 1e9));
  plan.notes.push_back(apply_step_jitter(g, plan.ranks, step_jitter(scenario, static_cast<int>(n))));
  plan.notes.push_back(scenario.training.compute.source == ComputeSpec::Source::Flops ? optimizer_note(true, "whole model")
                       : times.optimizer_s > 0                                         ? "optimizer step measured (profile)"
                                                                                       : optimizer_note(false, ""));
  if (n > 1 && !buckets.empty())
    plan.notes.push_back(nccl_slowdown_note(topology.gpu, nccl_channels, memory_bound, plan.nccl_slowdown_per_iteration_s));
  return plan;
}

}  // namespace dtsim
