// build_parallel_plan: data x pipeline x tensor parallel iterations as tasks (see pipeline.hpp).
#include "sim/collectives/collective.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/pipeline.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace dtsim {

namespace {

/// Most gradient buckets per pipeline stage: PyTorch's default 25 MB buckets give a few dozen even for
/// GPT-3's stages; 4096 leaves room for small caps and keeps the plan within memory and time.
constexpr double kMaxBucketsPerStage = 4096;

// Row-parallel linears under Megatron tensor parallelism: in a block holding an attention layer,
// the linears whose output is as wide as the block's input (attention output and MLP down
// projections); each ends in an AllReduce of its output.
std::vector<bool> row_parallel_layers(const Model& model)
{
  std::vector<bool> out(model.layers.size(), false);
  std::map<std::string, std::pair<std::size_t, std::size_t>> blocks;  // block -> [first, last)
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    auto [it, fresh] = blocks.try_emplace(model.layers[i].block, i, i + 1);
    if (!fresh)
      it->second.second = i + 1;
  }
  for (const auto& [name, range] : blocks) {
    bool attention = false;
    for (std::size_t i = range.first; i < range.second; ++i)
      attention = attention || model.layers[i].kind == "attention";
    if (!attention)
      continue;
    const double width = model.layers[range.first].activation_elems;
    for (std::size_t i = range.first; i < range.second; ++i)
      out[i] = model.layers[i].kind == "linear" && model.layers[i].activation_elems == width;
  }
  return out;
}

struct StageCost {
  double fwd = 0, bwd = 0;   // one micro-batch on one tensor rank
  double tp_bytes = 0;       // AllReduce bytes per micro-batch, per direction
  double send_bytes = 0;     // boundary activation (or its gradient) per micro-batch, whole stage
  double params = 0;         // parameters of the whole stage
};

}  // namespace

Plan build_parallel_plan(const Scenario& scenario, const Topology& topology, const Model& model,
                         const ParallelConfig& cfg, int iterations, int warmup,
                         const CollectiveOptions& collectives)
{
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  plan.warmup_iterations = warmup;
  plan.pipeline_stages = cfg.stages;
  plan.microbatches = cfg.microbatches;
  const int D = cfg.data, P = cfg.stages, T = cfg.tensor, M = cfg.microbatches;
  const auto dev = [&](int d, int s, int t) { return plan.ranks[static_cast<std::size_t>((d * P + s) * T + t)]; };
  const double batch = static_cast<double>(scenario.training.batch_per_gpu);
  const double micro = batch / M;
  const MemoryRules mem = memory_rules(scenario);
  const LayerTimes full = layer_times(model, scenario, topology.gpu, batch, cfg.half_efficiency_samples);
  const LayerTimes mt = layer_times(model, scenario, topology.gpu, micro, cfg.half_efficiency_samples);
  std::vector<StageRange> ranges = cfg.ranges;
  if (ranges.empty()) {
    std::vector<double> cost(model.layers.size());
    for (std::size_t i = 0; i < cost.size(); ++i)
      cost[i] = full.fwd[i] + full.bwd[i];
    ranges = partition_balanced(model, cost, P, scenario.strategy_options());
  }
  const std::vector<bool> row_parallel = row_parallel_layers(model);
  std::vector<StageCost> sc(static_cast<std::size_t>(P));
  for (int s = 0; s < P; ++s) {
    auto& c = sc[static_cast<std::size_t>(s)];
    const auto& r = ranges[static_cast<std::size_t>(s)];
    for (std::size_t i = r.first; i < r.last; ++i) {
      c.fwd += mt.fwd[i] / T;
      c.bwd += mt.bwd[i] / T;
      if (T > 1 && row_parallel[i])
        c.tp_bytes += model.layers[i].activation_elems * micro * mem.activation_bytes;
    }
    c.send_bytes = model.layers[r.last - 1].activation_elems * micro * mem.activation_bytes;
    c.params = params_in(model, r.first, r.last);
  }
  const double grad_elem = gradient_bytes_per_element(scenario.training.precision);

  double busiest = 0;
  for (const auto& c : sc)
    busiest = std::max(busiest, (c.fwd + c.bwd) * M);
  plan.compute_per_iteration_s = busiest;
  plan.single_gpu_iteration_s = full.step();
  plan.samples_per_iteration = batch * D;
  // Per communicator and iteration (plan.hpp): each tensor rank of each replica sends its share of
  // the boundary once per micro-batch each way; each replica's tensor group AllReduces once per
  // micro-batch each way; each (stage, tensor rank) AllReduces its gradients across the replicas.
  for (int s = 0; s + 1 < P; ++s) {
    const double message = sc[static_cast<std::size_t>(s)].send_bytes / T;
    plan.comm_per_iteration.push_back({fmt::format("stage {}->{} activations", s, s + 1), "send_recv", message * M, M, D * T});
    plan.comm_per_iteration.push_back({fmt::format("stage {}->{} gradients", s + 1, s), "send_recv", message * M, M, D * T});
  }
  if (T > 1)
    for (int s = 0; s < P; ++s)
      plan.comm_per_iteration.push_back({fmt::format("stage {} tensor-parallel", s), "all_reduce",
                                         2 * sc[static_cast<std::size_t>(s)].tp_bytes * M, 2 * M, D});
  if (D > 1)
    for (int s = 0; s < P; ++s) {
      const double bytes = sc[static_cast<std::size_t>(s)].params / T * grad_elem;
      const double wanted = std::ceil(bytes / (cfg.bucket_cap_mb * kMiB));
      // Each bucket is a collective of every replica in the plan: a tiny bucket_cap_mb gave
      // millions (0.0001 MB on ResNet-50: minutes before any output). DDP's buckets hold whole tensors.
      if (wanted > kMaxBucketsPerStage)
        scenario.strategy_options().at("bucket_cap_mb").fail(fmt::format(
            "expected at least {:.3g} MB: {} MB cuts stage {}'s {:.3g} MB of gradients into {:.3g} buckets (at most {})",
            bytes / kMiB / kMaxBucketsPerStage, cfg.bucket_cap_mb, s, bytes / kMiB, wanted, kMaxBucketsPerStage));
      const int buckets = std::max(1, static_cast<int>(wanted));
      plan.comm_per_iteration.push_back({fmt::format("stage {} gradients", s), "all_reduce", bytes, buckets, T});
    }

  TaskGraph& g = plan.graph;
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks));
  std::vector<LoaderLane> lanes;
  for (int d = 0; d < D; ++d) {
    const int cpu = host_cpu_of(topology, dev(d, 0, 0));
    lanes.emplace_back(loader, cpu >= 0 ? cpu : dev(d, 0, 0), fmt::format("replica {}'s DataLoader", d));
  }
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", "marker", {});
  std::vector<int> last(plan.ranks.size(), plan.setup_end);  // per GPU rank index: its last task
  const auto idx = [&](int d, int s, int t) { return static_cast<std::size_t>((d * P + s) * T + t); };
  std::vector<std::vector<std::pair<bool, int>>> order(static_cast<std::size_t>(P));
  for (int s = 0; s < P; ++s)
    order[static_cast<std::size_t>(s)] = stage_schedule(cfg.schedule, s, P, M);

  for (int it = 0; it < iterations; ++it) {
    g.set_iteration(it);
    for (int d = 0; d < D; ++d) {
      // arrived[s][i][t]: the transfer that brought micro-batch i's input (forward) / gradient (backward).
      std::vector<std::vector<std::vector<int>>> fwd_in(P, std::vector<std::vector<int>>(M, std::vector<int>(T, -1)));
      auto bwd_in = fwd_in;
      const int loaded = lanes[static_cast<std::size_t>(d)].load(g, batch, {last[idx(d, 0, 0)]});
      for (int t = 0; t < T; ++t) {
        std::vector<int> after{last[idx(d, 0, t)]};
        if (loaded >= 0)
          after.push_back(loaded);
        int copy = add_input_copy(g, topology, loader, dev(d, 0, t), batch, after,
                                  fmt::format("input batch host -> replica {}", d));
        if (copy < 0)
          copy = loaded;
        for (int i = 0; i < M; ++i)
          fwd_in[0][static_cast<std::size_t>(i)][static_cast<std::size_t>(t)] = copy;
      }
      std::vector<std::size_t> next(static_cast<std::size_t>(P), 0);
      std::vector<std::vector<bool>> fwd_done(P, std::vector<bool>(M, false));
      for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; ++s) {
          auto& pos = next[static_cast<std::size_t>(s)];
          const auto& ops = order[static_cast<std::size_t>(s)];
          while (pos < ops.size()) {
            const auto [backward, i] = ops[pos];
            const auto si = static_cast<std::size_t>(s);
            const auto ii = static_cast<std::size_t>(i);
            const bool ready = backward ? (s == P - 1 ? fwd_done[si][ii] : bwd_in[si][ii][0] >= 0)
                                        : (s == 0 || fwd_in[si][ii][0] >= 0);
            if (!ready)
              break;
            const auto& c = sc[si];
            std::vector<int> end(static_cast<std::size_t>(T));
            std::vector<std::vector<int>> start(static_cast<std::size_t>(T));
            for (int t = 0; t < T; ++t) {
              std::vector<int> deps{last[idx(d, s, t)]};
              const int data = backward ? bwd_in[si][ii][static_cast<std::size_t>(t)] : fwd_in[si][ii][static_cast<std::size_t>(t)];
              if (data >= 0)
                deps.push_back(data);
              g.set_group(i);
              end[static_cast<std::size_t>(t)] = g.add_compute(
                  dev(d, s, t), backward ? c.bwd : c.fwd,
                  fmt::format("{} micro-batch {} stage {}{}", backward ? "backward" : "forward", i, s,
                              T > 1 ? fmt::format(" tp {}", t) : ""),
                  backward ? "backward" : "forward", dtsim::deps(std::move(deps)));
              start[static_cast<std::size_t>(t)] = {end[static_cast<std::size_t>(t)]};
            }
            if (T > 1 && c.tp_bytes > 0) {
              std::vector<int> group;
              for (int t = 0; t < T; ++t)
                group.push_back(dev(d, s, t));
              CollectiveCall call{CollectiveOp::AllReduce, group, c.tp_bytes, 0,
                                  fmt::format("tp {} mb {} stage {}", backward ? "bwd" : "fwd", i, s), "tensor-parallel"};
              end = add_collective(g, topology, call, start, collectives).done;
            }
            for (int t = 0; t < T; ++t) {
              const auto ti = static_cast<std::size_t>(t);
              last[idx(d, s, t)] = end[ti];
              if (!backward && s + 1 < P)
                fwd_in[si + 1][ii][ti] = g.add_transfer(dev(d, s, t), dev(d, s + 1, t), c.send_bytes / T,
                                                        fmt::format("activations mb {} stage {} -> {}", i, s, s + 1),
                                                        "activation", {end[ti]});
              if (backward && s > 0)
                bwd_in[si - 1][ii][ti] = g.add_transfer(dev(d, s, t), dev(d, s - 1, t), sc[si - 1].send_bytes / T,
                                                        fmt::format("gradients mb {} stage {} -> {}", i, s, s - 1),
                                                        "activation-grad", {end[ti]});
            }
            g.set_group(-1);
            if (!backward)
              fwd_done[si][ii] = true;
            ++pos;
            progress = true;
          }
        }
      }
    }
    // Data-parallel gradient AllReduce per (stage, tensor rank), bucketed, then the optimizer.
    std::vector<int> all;
    for (int s = 0; s < P; ++s) {
      for (int t = 0; t < T; ++t) {
        std::vector<int> group;
        std::vector<std::vector<int>> start;
        for (int d = 0; d < D; ++d) {
          group.push_back(dev(d, s, t));
          start.push_back({last[idx(d, s, t)]});
        }
        if (D > 1) {
          const double bytes = sc[static_cast<std::size_t>(s)].params / T * grad_elem;
          const double cap = cfg.bucket_cap_mb * kMiB;
          const int buckets = std::max(1, static_cast<int>(std::ceil(bytes / cap)));
          for (int b = 0; b < buckets; ++b) {
            CollectiveCall call{CollectiveOp::AllReduce, group, std::min(cap, bytes - cap * b), 0,
                                fmt::format("stage {} tp {} gradient bucket {}", s, t, b), "allreduce"};
            const auto done = add_collective(g, topology, call, start, collectives).done;
            for (int d = 0; d < D; ++d)
              start[static_cast<std::size_t>(d)] = {done[static_cast<std::size_t>(d)]};
          }
        }
        for (int d = 0; d < D; ++d) {
          last[idx(d, s, t)] = g.add_delay(dev(d, s, t), 0.0, fmt::format("optimizer step (stage {})", s), "optimizer",
                                           dtsim::deps(start[static_cast<std::size_t>(d)]));
          all.push_back(last[idx(d, s, t)]);
        }
      }
    }
    plan.iteration_end.push_back(g.add_delay(plan.ranks[0], 0.0, fmt::format("iteration {} done", it), "marker", dtsim::deps(all)));
  }
  g.set_iteration(0);

  for (int d = 0; d < D; ++d)
    for (int s = 0; s < P; ++s)
      for (int t = 0; t < T; ++t) {
        const auto& r = ranges[static_cast<std::size_t>(s)];
        const int in_flight = cfg.schedule == PipelineSchedule::GPipe ? M : std::min(P - s, M);
        GpuMemory m = replica_memory(model, mem, r.first, r.last, 1.0 / T, micro * in_flight);
        m.device = dev(d, s, t);
        m.io = s == 0 ? loader.input_bytes_per_sample * batch : 0;
        plan.memory.push_back(m);
      }
  plan.gpu_memory_bytes = topology.gpu.memory_bytes;

  std::string stages;
  for (int s = 0; s < P; ++s) {
    const auto& r = ranges[static_cast<std::size_t>(s)];
    stages += fmt::format("{}{} [{} .. {}] {:.1f} ms", s ? "; " : "", s, model.layers[r.first].name,
                          model.layers[r.last - 1].name, (sc[static_cast<std::size_t>(s)].fwd + sc[static_cast<std::size_t>(s)].bwd) * M * 1e3);
  }
  plan.notes.push_back(fmt::format("compute: {}; backward = 2 x forward, spread over layers by FLOP share{}",
                                   describe_compute_source(scenario),
                                   cfg.half_efficiency_samples > 0
                                       ? fmt::format("; a GPU runs b samples at b/(b+{}) of its large-batch rate",
                                                     cfg.half_efficiency_samples)
                                       : ""));
  plan.notes.push_back(fmt::format("{} data x {} pipeline x {} tensor parallel; batch {} per replica in {} micro-batches "
                                   "of {:.4g}, schedule {}",
                                   D, P, T, batch, M, micro, cfg.schedule == PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
  plan.notes.push_back("stages (compute per iteration): " + stages);
  if (P > 1)
    plan.notes.push_back(fmt::format("ideal bubble (p-1)/(m+p-1) = {:.1f}% with balanced stages and free links",
                                     100.0 * (P - 1) / (M + P - 1)));
  if (T > 1)
    plan.notes.push_back("tensor parallel: one AllReduce per stage and micro-batch and direction, of the summed "
                         "row-parallel outputs; embeddings and head split evenly without communication");
  plan.notes.push_back(apply_step_jitter(plan.graph, plan.ranks, step_jitter(scenario, static_cast<int>(plan.ranks.size()))));
  return plan;
}

}  // namespace dtsim
