#include "sim/strategies/dp.hpp"

#include "sim/scenario/strategy_members.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/memory_timeline.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim {

DpOptions parse_dp_options(const JsonReader& strategy)
{
  reject_unknown_strategy_members(strategy);
  DpOptions o;
  // Host-side costs in microseconds: a kernel launch is ~5 us, replicate() ~100 us per module; a
  // second (1e6 us) is far above either, and beyond it the figures are nonsense, not a machine.
  const auto microseconds_or = [&](const char* key, double fallback) {
    const auto v = strategy.find(key);
    if (!v)
      return fallback;
    const double us = v->as_non_negative();
    if (us > 1e6)
      v->fail(fmt::format("expected microseconds from 0 to 1e6, got {:g}", us));
    return us;
  };
  o.launch_overhead_us_per_layer = microseconds_or("launch_overhead_us_per_layer", o.launch_overhead_us_per_layer);
  o.replicate_us_per_module = microseconds_or("replicate_us_per_module", o.replicate_us_per_module);
  o.coalesce_mb = strategy.positive_or("coalesce_mb", o.coalesce_mb);
  return o;
}

namespace {

// Adds a coalesced collective (broadcast_coalesced / reduce_add_coalesced): the buffer flattened
// into chunks of at most `chunk` bytes, one NCCL call per chunk, in order on every GPU's stream.
std::vector<int> add_coalesced(TaskGraph& g, const Topology& topology, CollectiveOp op, const std::vector<int>& ranks,
                               double bytes, double chunk, std::vector<std::vector<int>> start, const std::string& label,
                               TaskCategory category, const CollectiveOptions& collectives)
{
  const int chunks = std::max(1, static_cast<int>(std::ceil(bytes / chunk)));
  std::vector<int> done;
  for (int c = 0; c < chunks; ++c) {
    const double size = std::min(chunk, bytes - chunk * c);
    CollectiveCall call{op, ranks, size, 0, fmt::format("{} chunk {}/{}", label, c + 1, chunks), category};
    done = add_collective(g, topology, call, start, collectives).done;
    for (std::size_t r = 0; r < ranks.size(); ++r)
      start[r] = {done[r]};
  }
  return done;
}

int join(TaskGraph& g, int device, std::vector<int> after, const std::string& name, TaskCategory category)
{
  return g.add_delay(device, 0.0, name, category, std::move(after));
}

}  // namespace

Plan build_dp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                   const CollectiveOptions& collective_options)
{
  const JsonReader options = scenario.strategy_options();
  const DpOptions opt = parse_dp_options(options);
  const double half_eff = half_efficiency_samples_of(options);
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  const auto n = plan.ranks.size();
  // One Python process drives every replica: each NCCL call launches a kernel per GPU.
  CollectiveOptions collectives = collective_options;
  collectives.gpus_per_thread = static_cast<int>(n);
  for (int dev : plan.ranks) {
    if (topology.device(dev).node != topology.device(plan.ranks[0]).node)
      scenario.reader().at("gpus").fail(fmt::format(
          "DataParallel is one process on one node: expected at most {} GPUs (one {} node), got {}",
          topology.gpus_per_node, topology.name, scenario.gpus));
  }
  plan.warmup_iterations = warmup;
  const int gpu0 = plan.ranks[0];
  const double batch = static_cast<double>(scenario.training.batch_per_gpu);
  // GPU0 alone steps the optimizer, over the whole model.
  const LayerTimes times = with_optimizer_step(
      with_recomputation(model, layer_times(model, scenario, topology.gpu, batch, half_eff), scenario.training.recomputation),
      scenario, static_cast<double>(model.params()), topology.gpu);
  // One process: its main thread is the GIL's one Python lane (parallel_apply's threads take turns on
  // it); autograd's per-device threads run backward's launches without the GIL, one per GPU.
  HostExtras extras;
  extras.processes_per_socket = 1;
  if (times.step() > 0)
    extras.gpu_samples_per_s = batch * static_cast<double>(n) / times.step();
  if (times.step() > 0)
    extras.python_threads = static_cast<double>(n) *
                            std::min(1.0, kAutogradHostSecondsPerLayer * static_cast<double>(model.layers.size()) / times.step());
  const LoaderSpec loader = parse_loader(scenario, model, topology, 1, extras);
  const MemoryRules mem = memory_rules(scenario);
  const double param_elem = mem.weight_bytes >= 6 ? 2.0 : 4.0;  // the weights the replicas use
  const double param_bytes = static_cast<double>(model.params()) * param_elem + static_cast<double>(model.buffer_elems()) * 4.0;
  const double grad_bytes = static_cast<double>(model.params()) * gradient_bytes_per_element(scenario.training.precision);
  const double out_bytes = model.layers.back().activation_elems * batch * mem.activation_bytes;
  const double in_bytes = loader.input_bytes_per_sample * batch;
  const double chunk = opt.coalesce_mb * kMiB;
  const double launch_s = opt.launch_overhead_us_per_layer * 1e-6 * static_cast<double>(model.layers.size());
  const double replicate_s = opt.replicate_us_per_module * 1e-6 * static_cast<double>(model.layers.size());

  plan.compute_per_iteration_s = times.step();
  plan.single_gpu_iteration_s = times.step();
  plan.samples_per_iteration = batch * static_cast<double>(n);
  if (n > 1) {
    // The tensors the calls are made on (plan.hpp): the whole batch scattered, the whole output
    // gathered (GPU0's own chunk stays where it is).
    const double N = static_cast<double>(n);
    plan.comm_per_iteration = {{"input batch", "scatter", in_bytes * N},
                               {"replicate", "broadcast", param_bytes},
                               {"outputs", "gather", out_bytes * N},
                               {"loss gradient", "scatter", out_bytes * N},
                               {"gradients reduce_add", "reduce", grad_bytes}};
  }

  TaskGraph& g = plan.graph;
  const int cpu = host_cpu_of(topology, gpu0);
  LoaderLane lane(loader, cpu >= 0 ? cpu : gpu0, "one DataLoader");
  plan.setup_end = join(g, gpu0, {}, "set-up done", TaskCategory::Marker);
  std::vector<int> prev_end(n, plan.setup_end);  // per GPU: its last task of the previous iteration
  int prev_opt = plan.setup_end;
  for (int it = 0; it < iterations; ++it) {
    g.set_iteration(it);
    const int loaded = lane.load(g, batch * static_cast<double>(n), {prev_opt});
    std::vector<int> after_prev{prev_opt};
    if (loaded >= 0)
      after_prev.push_back(loaded);
    const int copy = add_input_copy(g, topology, loader, gpu0, batch * static_cast<double>(n), deps(after_prev),
                                    "input batch host -> GPU0");
    const int input_on_gpu0 = copy >= 0 ? copy : join(g, gpu0, deps(after_prev), "input batch on GPU0", TaskCategory::Marker);

    std::vector<int> input(n, input_on_gpu0);
    for (std::size_t r = 1; r < n; ++r)
      input[r] = g.add_transfer(gpu0, plan.ranks[r], in_bytes, fmt::format("scatter input chunk GPU0 -> rank {}", r),
                                TaskCategory::Scatter, deps({input_on_gpu0, prev_end[r]}));
    std::vector<int> replica_ready(n, prev_opt);
    if (n > 1) {
      std::vector<std::vector<int>> start(n);
      for (std::size_t r = 0; r < n; ++r)
        start[r] = deps({prev_opt, prev_end[r]});
      replica_ready = add_coalesced(g, topology, CollectiveOp::Broadcast, plan.ranks, param_bytes, chunk, start,
                                    "replicate", TaskCategory::Replicate, collectives);
    }
    // The Python lane (GIL): replicate() copies every module for every replica, GPU0's own included
    // (replicate(module, device_ids) makes len(device_ids) copies), then the forward launches of
    // every replica run one thread at a time.
    int python = -1;
    if (n > 1 && replicate_s > 0)
      python = g.add_delay(gpu0, replicate_s * static_cast<double>(n),
                           fmt::format("replicate modules for {} replicas (Python, GIL)", n), TaskCategory::Launch,
                           deps(replica_ready));
    // parallel_apply starts once replicate() has returned: no replica's forward runs before then.
    const int replicated = python;
    std::vector<int> fwd_end(n);
    for (std::size_t r = 0; r < n; ++r) {
      const int dev = plan.ranks[r];
      const int fwd = g.add_compute(dev, times.fwd_total(), fmt::format("forward (replica {})", r), TaskCategory::Forward,
                                    deps({replica_ready[r], input[r], replicated}));
      if (n > 1 && launch_s > 0) {
        std::vector<int> after{replica_ready[r], python};
        python = g.add_delay(dev, launch_s, fmt::format("launch forward of replica {} (Python thread, GIL)", r), TaskCategory::Launch,
                             deps(std::move(after)));
        fwd_end[r] = join(g, dev, {fwd, python}, fmt::format("forward done (replica {})", r), TaskCategory::Marker);
      } else {
        fwd_end[r] = fwd;
      }
    }
    std::vector<int> loss_deps{fwd_end[0]};
    for (std::size_t r = 1; r < n; ++r)
      loss_deps.push_back(g.add_transfer(plan.ranks[r], gpu0, out_bytes, fmt::format("gather output rank {} -> GPU0", r),
                                         TaskCategory::Gather, {fwd_end[r]}));
    const int loss = join(g, gpu0, deps(loss_deps), "loss on GPU0", TaskCategory::Loss);
    std::vector<int> bwd(n);
    for (std::size_t r = 0; r < n; ++r) {
      const int grad_in = r == 0 ? loss
                                 : g.add_transfer(gpu0, plan.ranks[r], out_bytes,
                                                  fmt::format("scatter loss gradient GPU0 -> rank {}", r), TaskCategory::GradScatter,
                                                  {loss});
      bwd[r] = g.add_compute(plan.ranks[r], times.bwd_total(), fmt::format("backward (replica {})", r), TaskCategory::Backward,
                             {grad_in});
    }
    std::vector<int> reduced = bwd;
    if (n > 1) {
      std::vector<std::vector<int>> start(n, deps(bwd));  // Broadcast's backward runs once every replica is done
      reduced = add_coalesced(g, topology, CollectiveOp::Reduce, plan.ranks, grad_bytes, chunk, start,
                              "reduce_add gradients", TaskCategory::Reduce, collectives);
    }
    prev_opt = times.optimizer_s > 0
                   ? g.add_compute(gpu0, times.optimizer_s, "optimizer step (GPU0 only)", TaskCategory::Optimizer, {reduced[0]})
                   : g.add_delay(gpu0, 0.0, "optimizer step (GPU0 only)", TaskCategory::Optimizer, {reduced[0]});
    std::vector<int> all{prev_opt};
    for (std::size_t r = 0; r < n; ++r) {
      prev_end[r] = reduced[r];
      all.push_back(reduced[r]);
    }
    plan.iteration_end.push_back(join(g, gpu0, deps(all), fmt::format("iteration {} done", it), TaskCategory::Marker));
  }
  g.set_iteration(0);

  // Memory (memory_timeline.hpp): GPU0 holds the module (weights, .grad, optimizer state), the whole
  // batch before the scatter and every replica's output gathered back; the other GPUs hold their
  // replica's weights (broadcast copies, non-leaf: no .grad, torch/nn/parallel/replicate.py) and
  // their share of the batch. Two walks, not one per GPU.
  {
    const MemoryContext mctx = memory_context(scenario, topology.gpu);
    StageMemoryRequest req;
    req.first = 0;
    req.last = model.layers.size();
    req.micro_batch = batch;
    req.io_bytes = (in_bytes + out_bytes) * static_cast<double>(n);
    const GpuMemory hub = gpu_memory(model, mctx, req, &plan.memory_curve);
    plan.memory_curve_device = plan.ranks.front();
    req.share.grads = req.share.optimizer = 0;
    req.io_bytes = in_bytes + out_bytes;
    const GpuMemory replica = gpu_memory(model, mctx, req);
    for (std::size_t r = 0; r < n; ++r) {
      plan.memory.push_back(r == 0 ? hub : replica);
      plan.memory.back().device = plan.ranks[r];
    }
  }
  plan.gpu_memory_bytes = topology.gpu.memory_bytes;
  plan.notes.push_back(fmt::format("compute: {}; {}", describe_compute_source(scenario), compute_spread_note(scenario, topology.gpu)));
  if (scenario.training.recomputation.any())
    plan.notes.push_back(checkpointing_note(scenario.training.recomputation));
  plan.notes.push_back(fmt::format(
      "DataParallel: GPU0 scatters inputs, replicates {:.1f} MiB of parameters+buffers and reduces {:.1f} MiB of "
      "gradients every iteration ({} MiB chunks); Python (one thread at a time, GIL): replicate {:.0f} us per module per "
      "replica, forward launches {:.0f} us per layer per replica",
      param_bytes / kMiB, grad_bytes / kMiB, opt.coalesce_mb, opt.replicate_us_per_module, opt.launch_overhead_us_per_layer));
  plan.notes.push_back(loader.describe() + fmt::format(" (one DataLoader for all {} GPUs, through GPU0)", n));
  plan.input_seconds_per_iteration = loader.batch_seconds(batch * static_cast<double>(n));
  plan.input_in_main_process = loader.workers == 0;
  if (const std::string host = loader.host_note(batch * static_cast<double>(n), plan.compute_per_iteration_s); !host.empty())
    plan.notes.push_back(host);
  plan.host = loader.host_summary(batch * static_cast<double>(n), plan.compute_per_iteration_s);
  plan.notes.push_back(apply_step_jitter(g, plan.ranks, step_jitter(scenario, static_cast<int>(n))));
  plan.notes.push_back(scenario.training.compute.source == ComputeSpec::Source::Flops
                           ? fmt::format("optimizer step on GPU0 alone, over the whole model, memory-bound at {:.0f}% of HBM "
                                         "bandwidth; the loss takes no time of its own",
                                         100 * kMemoryBoundFraction)
                           : "loss and optimizer step take no time of their own (folded into the measured step)");
  return plan;
}

}  // namespace dtsim
