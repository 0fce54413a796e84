// build_parallel_plan: data x pipeline x tensor parallel iterations as tasks (see pipeline.hpp): the
// set-up (degrees, stage costs, traffic per iteration) and the iterations; its parts are named in
// parallel_build.hpp.
#include "sim/strategies/buckets.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/parallel_build.hpp"
#include "sim/strategies/tp_overlap.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace dtsim {

namespace {

/// Most gradient buckets per pipeline stage: PyTorch's default 25 MB buckets give a few dozen even for
/// GPT-3's stages; the bound DDP and ZeRO keep (buckets.hpp) leaves room for small caps and keeps the
/// plan within memory and time.
constexpr double kMaxBucketsPerStage = kMaxBucketsPerIteration;

/// Per communicator and iteration (plan.hpp): each tensor rank of each replica sends its share of
/// the boundary once per micro-batch each way (scattered: the receiving tensor group gathers it);
/// each replica's tensor group AllReduces once per micro-batch each way; each (stage, tensor rank)
/// AllReduces its gradients across the replicas.
void count_traffic(const ParallelBuild& b)
{
  const int D = b.D, P = b.P, T = b.T, M = b.M, C = b.C, V = b.V;
  const ParallelConfig& cfg = b.cfg;
  auto& traffic = b.plan.comm_per_iteration;
  for (int s = 0; s + 1 < V; ++s) {
    const double message = b.boundary_bytes(s);
    const auto to = fmt::format(fmt::runtime(C > 1 ? "virtual stage {}->{}" : "stage {}->{}"), s, s + 1);
    const auto back = fmt::format(fmt::runtime(C > 1 ? "virtual stage {}->{}" : "stage {}->{}"), s + 1, s);
    traffic.push_back({to + " activations", "send_recv", message * M, M, D * T});
    traffic.push_back({back + " gradients", "send_recv", message * M, M, D * T});
    if (b.pipeline_scatter_gather()) {  // the receiving stage's tensor group gathers the whole tensor
      const double whole = b.sc[static_cast<std::size_t>(s)].send_bytes;
      traffic.push_back({to + " activations gather", "all_gather", whole * M, M, D});
      traffic.push_back({back + " gradients gather", "all_gather", whole * M, M, D});
    }
  }
  if (T > 1)
    for (int s = 0; s < V; ++s) {
      std::map<CollectiveOp, std::pair<double, int>> per_op;  // bytes and calls per micro-batch, both directions
      add_tensor_parallel_traffic(b.sc[static_cast<std::size_t>(s)].pieces, per_op);
      for (const auto& [op, sum] : per_op)
        traffic.push_back({b.stage_name(s) + " tensor-parallel", to_string(op), sum.first * M, sum.second * M, D});
    }
  if (b.embedding_sync)
    traffic.push_back({"embedding gradients (first and last stage)", "all_reduce", b.embedding_params / T * b.grad_elem, 1, D * T});
  if (D > 1)
    for (int s = 0; s < P; ++s) {
      const double bytes = b.stage_params[static_cast<std::size_t>(s)] / T * b.grad_elem;
      const int buckets = static_cast<int>(gradient_buckets(b, s).size());
      if (!cfg.distributed_optimizer) {
        traffic.push_back({fmt::format("stage {} gradients", s), "all_reduce", bytes, buckets, T});
        continue;
      }
      traffic.push_back({fmt::format("stage {} gradients", s), "reduce_scatter", bytes, buckets, T});
      traffic.push_back({fmt::format("stage {} parameters", s), "all_gather",
                         b.stage_params[static_cast<std::size_t>(s)] / T * b.param_elem, buckets, T});
    }
}

}  // namespace

std::vector<double> gradient_buckets(const ParallelBuild& b, int s)
{
  const double bytes = b.stage_params[static_cast<std::size_t>(s)] / b.T * b.grad_elem;
  const double cap = b.cfg.bucket_cap_mb * kMiB;
  const double wanted = std::ceil(bytes / cap);
  // Each bucket is a collective of every replica in the plan: a tiny bucket_cap_mb gave
  // millions (0.0001 MB on ResNet-50: minutes before any output). DDP's buckets hold whole tensors.
  if (wanted > kMaxBucketsPerStage) {
    const JsonReader options = b.scenario.strategy_options();
    const std::string cuts = fmt::format("{} MB cuts stage {}'s {:.3g} MB of gradients into {:.3g} buckets (at most {})",
                                         b.cfg.bucket_cap_mb, s, bytes / kMiB, wanted, kMaxBucketsPerStage);
    const double least = bytes / kMiB / kMaxBucketsPerStage;
    options.fail_member_or_here("bucket_cap_mb", fmt::format("expected at least {:.3g} MB: {}", least, cuts),
                                fmt::format("expected a bucket_cap_mb of at least {:.3g} MB: its default, {}", least, cuts));
  }
  std::vector<double> sizes(static_cast<std::size_t>(std::max(1.0, wanted)));
  for (std::size_t k = 0; k < sizes.size(); ++k)
    sizes[k] = std::min(cap, bytes - cap * static_cast<double>(k));
  return sizes;
}

std::string ParallelBuild::stage_name(int vs) const
{
  return fmt::format(fmt::runtime(C > 1 ? "virtual stage {}" : "stage {}"), vs);
}

ParallelBuild::ParallelBuild(const Scenario& scenario_, const Topology& topology_, const Model& model_,
                             const ParallelConfig& cfg_, const CollectiveOptions& collectives_, Plan& plan_)
    : scenario(scenario_), topology(topology_), model(model_), cfg(cfg_), collectives(collectives_), plan(plan_),
      D(cfg_.data), P(cfg_.stages), T(cfg_.tensor), M(cfg_.microbatches), C(cfg_.virtual_stages), V(cfg_.stages * cfg_.virtual_stages)
{
  fold = collectives.fold_ranks && D * T > 1;
  Dn = fold ? 1 : D;
  Tn = fold ? 1 : T;
  if (fold)
    folded.emplace(topology, collectives);
  batch = static_cast<double>(scenario.training.batch_per_gpu);
  micro = batch / M;
  mem = memory_rules(scenario);
  const TensorSplit split{T, cfg.sequence_parallel && T > 1};
  full = layer_times(model, scenario, topology.gpu, batch, cfg.half_efficiency_samples, split);
  const LayerTimes mt = layer_times(model, scenario, topology.gpu, micro, cfg.half_efficiency_samples, split);
  ranges = cfg.ranges;
  if (ranges.empty()) {
    std::vector<double> cost(model.layers.size());
    for (std::size_t i = 0; i < cost.size(); ++i)
      cost[i] = full.fwd[i] + full.bwd[i];
    ranges = partition_balanced(model, cost, P, scenario.strategy_options());
  }
  // Megatron's tensor parallelism: backward collectives beside the GEMMs (megatron_stage.hpp).
  TensorParallelOptions tp{T, cfg.sequence_parallel, scenario.training.recomputation, cfg.tp_backward_overlap};
  sc.resize(static_cast<std::size_t>(V));
  overlap_slowdown.assign(static_cast<std::size_t>(P), 0.0);
  const StageMarks marks = stage_marks(model);
  for (int s = 0; s < V; ++s) {
    auto& c = sc[static_cast<std::size_t>(s)];
    const auto& r = ranges[static_cast<std::size_t>(s)];
    c.pieces = stage_pieces(model, marks, mt, r, micro, mem.activation_bytes, tp);
    if (T > 1 && cfg.tp_backward_overlap) {
      std::vector<int> group;
      for (int t = 0; t < T; ++t)
        group.push_back(dev(0, stage_of(s), t));
      const TpOverlapSlowdown slow = slow_gemms_beside_tp(c.pieces, group, topology, collectives.filter);
      overlap_slowdown[static_cast<std::size_t>(stage_of(s))] += slow.seconds_per_micro_batch * M;
      overlap_channels = std::max(overlap_channels, slow.channels);
    }
    for (const auto& piece : c.pieces) {
      c.fwd += piece.fwd_s;
      c.bwd += piece.bwd_s + piece.recompute_s;
    }
    c.send_bytes = model.layers[r.last - 1].activation_elems * micro * mem.activation_bytes;
    c.params = params_in(model, r.first, r.last);
  }
  stage_params.assign(static_cast<std::size_t>(P), 0.0);
  stage_compute.assign(static_cast<std::size_t>(P), 0.0);
  for (int vs = 0; vs < V; ++vs) {
    stage_params[static_cast<std::size_t>(stage_of(vs))] += sc[static_cast<std::size_t>(vs)].params;
    stage_compute[static_cast<std::size_t>(stage_of(vs))] += sc[static_cast<std::size_t>(vs)].fwd + sc[static_cast<std::size_t>(vs)].bwd;
  }
  embedding_sync = P > 1 && tied_embeddings(model);
  embedding_params = embedding_sync ? static_cast<double>(model.layers.front().params()) : 0;
  // The last stage's output layer is a parameter of its own there (Megatron's
  // shared_embedding_or_output_weight): in that stage's gradient buffer, buckets and optimizer.
  stage_params.back() += embedding_params;
  half_weights = scenario.training.precision == Precision::Fp16 || scenario.training.precision == Precision::Bf16;
  add_optimizer = scenario.training.compute.source == ComputeSpec::Source::Flops && scenario.strategy_spec.kind == StrategyKind::Hybrid;
  roofline = scenario.training.compute.model == ComputeSpec::Model::Roofline;
  param_elem = half_weights ? 2.0 : 4.0;
  grad_elem = cfg.megatron ? megatron_gradient_bytes_per_element(scenario.training.precision)
                           : gradient_bytes_per_element(scenario.training.precision);
}

Plan build_parallel_plan(const Scenario& scenario, const Topology& topology, const Model& model,
                         const ParallelConfig& cfg, int iterations, int warmup,
                         const CollectiveOptions& collectives)
{
  Plan plan;
  plan.ranks = pick_ranks(scenario, topology);
  plan.warmup_iterations = warmup;
  plan.pipeline_stages = cfg.stages;
  plan.microbatches = cfg.microbatches;
  plan.virtual_stages = cfg.virtual_stages;
  ParallelBuild b(scenario, topology, model, cfg, collectives, plan);
  const int D = b.D, P = b.P, T = b.T, M = b.M, C = b.C;
  for (int s = 0; s < P; ++s) {
    plan.stage_devices.push_back(b.dev(0, s, 0));
    auto& gpus = plan.stage_gpus.emplace_back();
    for (int d = 0; d < D; ++d)
      for (int t = 0; t < T; ++t)
        gpus.push_back(b.dev(d, s, t));
  }

  double busiest = 0;
  for (const double c : b.stage_compute)
    busiest = std::max(busiest, c * M);
  plan.compute_per_iteration_s = busiest;
  // One GPU alone splits nothing (the roofline's times above count unsplit kernels on each tensor rank);
  // it recomputes as the ranks do, and steps the optimizer over the whole model where the plan adds one.
  const LayerTimes one_gpu =
      with_recomputation(model, T > 1 ? layer_times(model, scenario, topology.gpu, b.batch, cfg.half_efficiency_samples) : b.full,
                         scenario.training.recomputation);
  plan.single_gpu_iteration_s =
      (b.add_optimizer ? with_optimizer_step(one_gpu, scenario, static_cast<double>(model.params()), topology.gpu) : one_gpu).step();
  plan.samples_per_iteration = b.batch * D;
  count_traffic(b);

  TaskGraph& g = plan.graph;
  // A replica's first stage takes a batch per iteration, at the pace of the busiest stage.
  HostExtras extras =
      host_extras(topology, plan.ranks, plan.compute_per_iteration_s > 0 ? b.batch / plan.compute_per_iteration_s : 0.0);
  {  // The processes that load: tensor rank 0 of the first stage (torch's Pipe), and of the last (Megatron).
    std::vector<int> loading;
    for (int d = 0; d < D; ++d)
      for (const int s : cfg.megatron && P > 1 ? std::vector<int>{0, P - 1} : std::vector<int>{0})
        loading.push_back(b.dev(d, s, 0));
    extras.loading_per_node = processes_per_node(topology, loading);
    extras.loading_per_socket = processes_per_socket(topology, loading);
  }
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks), extras);
  std::vector<LoaderLane> lanes;
  for (int d = 0; d < b.Dn; ++d) {
    const int cpu = host_cpu_of(topology, b.dev(d, 0, 0));
    lanes.emplace_back(loader, cpu >= 0 ? cpu : b.dev(d, 0, 0), fmt::format("replica {}'s DataLoader", d));
  }
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", TaskCategory::Marker, {});
  b.last.assign(plan.ranks.size(), plan.setup_end);
  std::vector<std::vector<ChunkOp>> order(static_cast<std::size_t>(P));
  for (int s = 0; s < P; ++s) {
    if (C > 1) {
      order[static_cast<std::size_t>(s)] = interleaved_schedule(s, P, M, C);
      continue;
    }
    for (const auto& [backward, micro_id] : stage_schedule(cfg.schedule, s, P, M))
      order[static_cast<std::size_t>(s)].push_back({backward, micro_id, 0});
  }

  for (int it = 0; it < iterations; ++it) {
    g.set_iteration(it);
    for (int d = 0; d < b.Dn; ++d) {
      ReplicaFlow flow(b.V, M, T);
      const int loaded = lanes[static_cast<std::size_t>(d)].load(g, b.batch, {b.last[b.idx(d, 0, 0)]});
      for (int t = 0; t < b.Tn; ++t) {
        std::vector<int> after{b.last[b.idx(d, 0, t)]};
        if (loaded >= 0)
          after.push_back(loaded);
        int copy = add_input_copy(g, topology, loader, b.dev(d, 0, t), b.batch, after,
                                  fmt::format("input batch host -> replica {}", d));
        if (copy < 0)
          copy = loaded;
        for (int i = 0; i < M; ++i)
          flow.fwd_in[0][static_cast<std::size_t>(i)][static_cast<std::size_t>(t)] = copy;
      }
      // Each stage runs its schedule as far as its inputs allow, round after round, until all have run.
      std::vector<std::size_t> next(static_cast<std::size_t>(P), 0);
      for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; ++s) {
          auto& pos = next[static_cast<std::size_t>(s)];
          const auto& ops = order[static_cast<std::size_t>(s)];
          for (; pos < ops.size() && stage_op_ready(b, s, ops[pos], flow); ++pos) {
            add_stage_op(b, d, s, ops[pos], flow);
            progress = true;
          }
        }
      }
    }
    add_step_end(b, it);
  }
  g.set_iteration(0);
  finish_parallel_plan(b, loader);
  return plan;
}

}  // namespace dtsim
