// build_parallel_plan: data x pipeline x tensor parallel iterations as tasks (see pipeline.hpp).
#include "sim/collectives/collective.hpp"
#include "sim/strategies/compute_time.hpp"
#include "sim/strategies/jitter.hpp"
#include "sim/strategies/ddp.hpp"
#include "sim/strategies/folded_comms.hpp"
#include "sim/strategies/loader.hpp"
#include "sim/strategies/megatron_stage.hpp"
#include "sim/strategies/memory.hpp"
#include "sim/strategies/optimizer_step.hpp"
#include "sim/strategies/parallel_memory.hpp"
#include "sim/strategies/pipeline.hpp"
#include "sim/strategies/roofline.hpp"
#include "sim/strategies/tp_overlap.hpp"
#include "sim/strategies/task_util.hpp"
#include "sim/util/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

namespace dtsim {

namespace {

/// Most gradient buckets per pipeline stage: PyTorch's default 25 MB buckets give a few dozen even for
/// GPT-3's stages; 4096 leaves room for small caps and keeps the plan within memory and time.
constexpr double kMaxBucketsPerStage = 4096;

struct StageCost {
  double fwd = 0, bwd = 0;   // one micro-batch on one tensor rank (recomputation included in bwd)
  std::vector<StagePiece> pieces;  // the same, cut where tensor-parallel collectives fall
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
  plan.virtual_stages = cfg.virtual_stages;
  const int D = cfg.data, P = cfg.stages, T = cfg.tensor, M = cfg.microbatches;
  // Virtual stages, chunk-major (vs = chunk * P + s): one per stage unless interleaved (Megatron's
  // virtual pipeline: GPU s holds chunks s, P + s, 2P + s, ...).
  const int C = cfg.virtual_stages, V = P * C;
  const auto stage_of = [P](int vs) { return vs % P; };
  const auto idx = [&](int d, int s, int t) { return static_cast<std::size_t>(cfg.order.index(d, s, t, D, P, T)); };
  const auto dev = [&](int d, int s, int t) { return plan.ranks[idx(d, s, t)]; };
  for (int s = 0; s < P; ++s)
    plan.stage_devices.push_back(dev(0, s, 0));
  // Folded (folded_comms.hpp): replica 0's tensor rank 0 of each stage stands for the stage's D x T
  // GPUs, which run the same schedule; its communications are timed with their images.
  const bool fold = collectives.fold_ranks && D * T > 1;
  const int Dn = fold ? 1 : D, Tn = fold ? 1 : T;  // replicas and tensor ranks simulated
  std::optional<FoldedComms> folded;
  if (fold)
    folded.emplace(topology, collectives);
  const double batch = static_cast<double>(scenario.training.batch_per_gpu);
  const double micro = batch / M;
  const MemoryRules mem = memory_rules(scenario);
  const TensorSplit split{T, cfg.sequence_parallel && T > 1};
  const LayerTimes full = layer_times(model, scenario, topology.gpu, batch, cfg.half_efficiency_samples, split);
  const LayerTimes mt = layer_times(model, scenario, topology.gpu, micro, cfg.half_efficiency_samples, split);
  std::vector<StageRange> ranges = cfg.ranges;
  if (ranges.empty()) {
    std::vector<double> cost(model.layers.size());
    for (std::size_t i = 0; i < cost.size(); ++i)
      cost[i] = full.fwd[i] + full.bwd[i];
    ranges = partition_balanced(model, cost, P, scenario.strategy_options());
  }
  // Megatron's tensor parallelism: backward collectives beside the GEMMs (megatron_stage.hpp).
  const TensorParallelOptions tp{T, cfg.sequence_parallel, scenario.training.activation_checkpointing,
                                 cfg.tp_backward_overlap};
  std::vector<StageCost> sc(static_cast<std::size_t>(V));  // per virtual stage
  std::vector<double> overlap_slowdown(static_cast<std::size_t>(P), 0.0);  // per stage, one iteration
  int overlap_channels = 0;
  for (int s = 0; s < V; ++s) {
    auto& c = sc[static_cast<std::size_t>(s)];
    const auto& r = ranges[static_cast<std::size_t>(s)];
    c.pieces = stage_pieces(model, mt, r, micro, mem.activation_bytes, tp);
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
  std::vector<double> stage_params(static_cast<std::size_t>(P), 0.0), stage_compute(static_cast<std::size_t>(P), 0.0);
  for (int vs = 0; vs < V; ++vs) {
    stage_params[static_cast<std::size_t>(stage_of(vs))] += sc[static_cast<std::size_t>(vs)].params;
    stage_compute[static_cast<std::size_t>(stage_of(vs))] += sc[static_cast<std::size_t>(vs)].fwd + sc[static_cast<std::size_t>(vs)].bwd;
  }
  const auto stage_name = [C](int vs) { return fmt::format(fmt::runtime(C > 1 ? "virtual stage {}" : "stage {}"), vs); };
  // Megatron's word embedding tied to the output layer, on two stages: its gradient is summed
  // between them (finalize_model_grads.py, _allreduce_embedding_grads).
  const bool embedding_sync = P > 1 && tied_embeddings(model);
  const double embedding_params = embedding_sync ? static_cast<double>(model.layers.front().params()) : 0;
  // Megatron's optimizer step, when compute comes from FLOPs (a measured step already holds it; the
  // seed's pipeline and DDP leave it out of FLOP-based compute as before).
  const bool half_weights = scenario.training.precision == Precision::Fp16 || scenario.training.precision == Precision::Bf16;
  const bool add_optimizer = scenario.training.compute.source == ComputeSpec::Source::Flops &&
                             scenario.strategy_spec.kind == StrategyKind::Hybrid;
  // The roofline model times every memory-bound pass of Megatron's optimizer (optimizer_step.hpp).
  const bool roofline = scenario.training.compute.model == ComputeSpec::Model::Roofline;
  const double param_elem = half_weights ? 2.0 : 4.0;  // the model's weights, as the distributed optimizer gathers them
  const double grad_elem = gradient_bytes_per_element(scenario.training.precision);

  double busiest = 0;
  for (const double c : stage_compute)
    busiest = std::max(busiest, c * M);
  plan.compute_per_iteration_s = busiest;
  // One GPU alone splits nothing (the roofline's times above count unsplit kernels on each tensor rank).
  plan.single_gpu_iteration_s = T > 1 ? layer_times(model, scenario, topology.gpu, batch, cfg.half_efficiency_samples).step()
                                      : full.step();
  plan.samples_per_iteration = batch * D;
  // Per communicator and iteration (plan.hpp): each tensor rank of each replica sends its share of
  // the boundary once per micro-batch each way; each replica's tensor group AllReduces once per
  // micro-batch each way; each (stage, tensor rank) AllReduces its gradients across the replicas.
  for (int s = 0; s + 1 < V; ++s) {
    const double message = sc[static_cast<std::size_t>(s)].send_bytes / T;
    const auto to = fmt::format(fmt::runtime(C > 1 ? "virtual stage {}->{}" : "stage {}->{}"), s, s + 1);
    const auto back = fmt::format(fmt::runtime(C > 1 ? "virtual stage {}->{}" : "stage {}->{}"), s + 1, s);
    plan.comm_per_iteration.push_back({to + " activations", "send_recv", message * M, M, D * T});
    plan.comm_per_iteration.push_back({back + " gradients", "send_recv", message * M, M, D * T});
  }
  if (T > 1)
    for (int s = 0; s < V; ++s) {
      std::map<CollectiveOp, std::pair<double, int>> per_op;  // bytes and calls per micro-batch, both directions
      const auto count = [&per_op](const std::vector<TpCollective>& list) {
        for (const auto& c : list) {
          per_op[c.op].first += c.bytes;
          ++per_op[c.op].second;
        }
      };
      for (const auto& piece : sc[static_cast<std::size_t>(s)].pieces) {
        count(piece.after_fwd);
        count(piece.before_bwd);
        for (const auto& b : piece.beside)
          count({b.collective});
        count(piece.after_bwd);
        if (piece.recompute_collectives)
          count(piece.after_fwd);
      }
      for (const auto& [op, sum] : per_op)
        plan.comm_per_iteration.push_back({stage_name(s) + " tensor-parallel", to_string(op), sum.first * M,
                                           sum.second * M, D});
    }
  if (embedding_sync)
    plan.comm_per_iteration.push_back({"embedding gradients (first and last stage)", "all_reduce",
                                       embedding_params / T * grad_elem, 1, D * T});
  if (D > 1)
    for (int s = 0; s < P; ++s) {
      const double bytes = stage_params[static_cast<std::size_t>(s)] / T * grad_elem;
      const double wanted = std::ceil(bytes / (cfg.bucket_cap_mb * kMiB));
      // Each bucket is a collective of every replica in the plan: a tiny bucket_cap_mb gave
      // millions (0.0001 MB on ResNet-50: minutes before any output). DDP's buckets hold whole tensors.
      if (wanted > kMaxBucketsPerStage)
        scenario.strategy_options().at("bucket_cap_mb").fail(fmt::format(
            "expected at least {:.3g} MB: {} MB cuts stage {}'s {:.3g} MB of gradients into {:.3g} buckets (at most {})",
            bytes / kMiB / kMaxBucketsPerStage, cfg.bucket_cap_mb, s, bytes / kMiB, wanted, kMaxBucketsPerStage));
      const int buckets = std::max(1, static_cast<int>(wanted));
      if (!cfg.distributed_optimizer) {
        plan.comm_per_iteration.push_back({fmt::format("stage {} gradients", s), "all_reduce", bytes, buckets, T});
        continue;
      }
      plan.comm_per_iteration.push_back({fmt::format("stage {} gradients", s), "reduce_scatter", bytes, buckets, T});
      plan.comm_per_iteration.push_back({fmt::format("stage {} parameters", s), "all_gather",
                                         stage_params[static_cast<std::size_t>(s)] / T * param_elem, buckets, T});
    }

  TaskGraph& g = plan.graph;
  // A replica's first stage takes a batch per iteration, at the pace of the busiest stage.
  const HostExtras extras =
      host_extras(topology, plan.ranks, plan.compute_per_iteration_s > 0 ? batch / plan.compute_per_iteration_s : 0.0);
  const LoaderSpec loader = parse_loader(scenario, model, topology, processes_per_node(topology, plan.ranks), extras);
  std::vector<LoaderLane> lanes;
  for (int d = 0; d < Dn; ++d) {
    const int cpu = host_cpu_of(topology, dev(d, 0, 0));
    lanes.emplace_back(loader, cpu >= 0 ? cpu : dev(d, 0, 0), fmt::format("replica {}'s DataLoader", d));
  }
  plan.setup_end = g.add_delay(plan.ranks[0], 0.0, "set-up done", TaskCategory::Marker, {});
  std::vector<int> last(plan.ranks.size(), plan.setup_end);  // per GPU rank index: its last task
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
    for (int d = 0; d < Dn; ++d) {
      // arrived[s][i][t]: the transfer that brought micro-batch i's input (forward) / gradient (backward).
      std::vector<std::vector<std::vector<int>>> fwd_in(V, std::vector<std::vector<int>>(M, std::vector<int>(T, -1)));
      auto bwd_in = fwd_in;
      const int loaded = lanes[static_cast<std::size_t>(d)].load(g, batch, {last[idx(d, 0, 0)]});
      for (int t = 0; t < Tn; ++t) {
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
      std::vector<std::vector<bool>> fwd_done(V, std::vector<bool>(M, false));
      for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < P; ++s) {
          auto& pos = next[static_cast<std::size_t>(s)];
          const auto& ops = order[static_cast<std::size_t>(s)];
          while (pos < ops.size()) {
            const bool backward = ops[pos].backward;  // plain locals: the lambdas below capture them (clang 14)
            const int i = ops[pos].micro;
            const int vs = ops[pos].chunk * P + s;  // its virtual stage
            const auto si = static_cast<std::size_t>(vs);
            const auto ii = static_cast<std::size_t>(i);
            const bool ready = backward ? (vs == V - 1 ? fwd_done[si][ii] : bwd_in[si][ii][0] >= 0)
                                        : (vs == 0 || fwd_in[si][ii][0] >= 0);
            if (!ready)
              break;
            const auto& c = sc[si];
            const std::string at_stage = stage_name(vs);
            // Each tensor rank's chain: the stage's pieces in order (backward: reversed, each after
            // its recomputation), each piece's collectives among the stage's tensor ranks after it.
            std::vector<std::vector<int>> at(static_cast<std::size_t>(Tn));  // per rank: what its next task waits on
            for (int t = 0; t < Tn; ++t) {
              auto& deps = at[static_cast<std::size_t>(t)];
              deps = {last[idx(d, s, t)]};
              const int data = backward ? bwd_in[si][ii][static_cast<std::size_t>(t)] : fwd_in[si][ii][static_cast<std::size_t>(t)];
              if (data >= 0)
                deps.push_back(data);
            }
            g.set_group(i);
            const auto compute = [&](double seconds, TaskCategory what, const std::string& piece) {
              for (int t = 0; t < Tn; ++t) {
                auto& deps = at[static_cast<std::size_t>(t)];
                deps = {g.add_compute(dev(d, s, t), seconds,
                                      fmt::format("{} micro-batch {} {}{}{}", what, i, at_stage,
                                                  T > 1 ? fmt::format(" tp {}", t) : "", piece),
                                      what, dtsim::deps(std::move(deps)))};
              }
            };
            const auto tp_collectives = [&](const std::vector<TpCollective>& list, const char* what) {
              for (const auto& tc : list) {
                const auto call_of = [&](int replica) {
                  std::vector<int> group;
                  for (int t = 0; t < T; ++t)
                    group.push_back(dev(replica, s, t));
                  return CollectiveCall{tc.op, group, tc.bytes, 0, fmt::format("tp {} mb {} {}", what, i, at_stage),
                                        TaskCategory::TensorParallel};
                };
                if (fold) {  // every replica's group of this stage at once
                  std::vector<ClockedComm> set;
                  for (int r = 0; r < D; ++r)
                    set.push_back({call_of(r)});
                  at[0] = {folded->add(g, set, {{0, 0, dev(0, s, 0), at[0]}}, set.front().call.label, TaskCategory::TensorParallel)[0]};
                  continue;
                }
                const auto done = add_collective(g, topology, call_of(d), at, collectives).done;
                for (int t = 0; t < T; ++t)
                  at[static_cast<std::size_t>(t)] = {done[static_cast<std::size_t>(t)]};
              }
            };
            const auto n = c.pieces.size();
            for (std::size_t k = 0; k < n; ++k) {
              const StagePiece& piece = c.pieces[backward ? n - 1 - k : k];
              const std::string where = piece.name.empty() ? "" : " " + piece.name;
              if (backward && piece.recompute_s > 0) {
                compute(piece.recompute_s, TaskCategory::Recompute, where);
                if (piece.recompute_collectives)
                  tp_collectives(piece.after_fwd, "recompute");
              }
              if (!backward) {
                compute(piece.fwd_s, TaskCategory::Forward, where);
                tp_collectives(piece.after_fwd, "fwd");
                continue;
              }
              tp_collectives(piece.before_bwd, "bwd");
              compute(piece.bwd_main_s(), TaskCategory::Backward, where);
              for (const auto& b : piece.beside) {  // issued together, both waited for
                const auto issued = at;
                compute(b.compute_s, TaskCategory::Backward, where + " (GEMM beside tp)");
                const auto computed = at;
                at = issued;
                tp_collectives({b.collective}, "bwd");
                for (int t = 0; t < Tn; ++t)
                  at[static_cast<std::size_t>(t)].push_back(computed[static_cast<std::size_t>(t)].front());
              }
              if (piece.bwd_after_s > 0)
                compute(piece.bwd_after_s, TaskCategory::Backward, where);
              tp_collectives(piece.after_bwd, "bwd");
            }
            std::vector<int> end(static_cast<std::size_t>(Tn));
            for (int t = 0; t < Tn; ++t) {
              auto& deps = at[static_cast<std::size_t>(t)];
              end[static_cast<std::size_t>(t)] =
                  deps.size() == 1 ? deps.front()
                                   : g.add_delay(dev(d, s, t), 0.0, fmt::format("tp joined mb {} {}", i, at_stage),
                                                 TaskCategory::Marker, dtsim::deps(std::move(deps)));
            }
            // A boundary send of every replica's tensor ranks at once, timed with them (folded).
            const auto folded_send = [&](int to_vs, double bytes, const std::string& name, TaskCategory category) {
              std::vector<ClockedComm> set;
              for (int r = 0; r < D; ++r)
                for (int t = 0; t < T; ++t)
                  set.push_back({CollectiveCall{CollectiveOp::SendRecv, {dev(r, s, t), dev(r, stage_of(to_vs), t)}, bytes, 0,
                                                name, category},
                                 true});
              return folded->add(g, set, {{0, 0, dev(0, s, 0), {end[0]}}}, name, category)[0];
            };
            if (fold) {
              last[idx(0, s, 0)] = end[0];
              if (!backward && vs + 1 < V)
                fwd_in[si + 1][ii][0] = folded_send(vs + 1, c.send_bytes / T,
                                                    fmt::format("activations mb {} {} -> {}", i, at_stage, vs + 1), TaskCategory::Activation);
              if (backward && vs > 0)
                bwd_in[si - 1][ii][0] = folded_send(vs - 1, sc[si - 1].send_bytes / T,
                                                    fmt::format("gradients mb {} {} -> {}", i, at_stage, vs - 1), TaskCategory::ActivationGrad);
            }
            for (int t = 0; t < Tn && !fold; ++t) {
              const auto ti = static_cast<std::size_t>(t);
              last[idx(d, s, t)] = end[ti];
              if (!backward && vs + 1 < V)
                fwd_in[si + 1][ii][ti] = g.add_transfer(dev(d, s, t), dev(d, stage_of(vs + 1), t), c.send_bytes / T,
                                                        fmt::format("activations mb {} {} -> {}", i, at_stage, vs + 1),
                                                        TaskCategory::Activation, {end[ti]});
              if (backward && vs > 0)
                bwd_in[si - 1][ii][ti] = g.add_transfer(dev(d, s, t), dev(d, stage_of(vs - 1), t), sc[si - 1].send_bytes / T,
                                                        fmt::format("gradients mb {} {} -> {}", i, at_stage, vs - 1),
                                                        TaskCategory::ActivationGrad, {end[ti]});
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
    // Data-parallel gradients per (stage, tensor rank), bucketed: AllReduced, or with the distributed
    // optimizer reduce-scattered (each replica then updates 1/D of them and the parameters are
    // all-gathered). Then the tied embedding's gradient between the first and last stage, then the
    // optimizer (megatron/core/distributed/finalize_model_grads.py; optimizer/distrib_optimizer.py).
    std::vector<std::vector<std::vector<int>>> synced(static_cast<std::size_t>(P),
                                                      std::vector<std::vector<int>>(static_cast<std::size_t>(T)));
    const double cap = cfg.bucket_cap_mb * kMiB;
    const auto buckets_of = [&](double bytes) { return std::max(1, static_cast<int>(std::ceil(bytes / cap))); };
    // One collective of (stage s, tensor rank t)'s replicas, each replica d < Dn after start[d]; folded,
    // every tensor rank's group of the stage at once.
    const auto dp_collective = [&](CollectiveOp op, int s, int t, double bytes, const std::string& name, TaskCategory category,
                                   std::vector<std::vector<int>>& start) {
      const auto group_of = [&](int tensor_rank) {
        std::vector<int> group;
        for (int d = 0; d < D; ++d)
          group.push_back(dev(d, s, tensor_rank));
        return group;
      };
      if (fold) {
        std::vector<ClockedComm> set;
        for (int r = 0; r < T; ++r)
          set.push_back({CollectiveCall{op, group_of(r), bytes, 0, name, category}});
        start[0] = {folded->add(g, set, {{0, 0, dev(0, s, 0), start[0]}}, name, category)[0]};
        return;
      }
      const auto done = add_collective(g, topology, CollectiveCall{op, group_of(t), bytes, 0, name, category}, start, collectives).done;
      for (int d = 0; d < D; ++d)
        start[static_cast<std::size_t>(d)] = {done[static_cast<std::size_t>(d)]};
    };
    for (int s = 0; s < P; ++s) {
      for (int t = 0; t < Tn; ++t) {
        std::vector<std::vector<int>> start;
        for (int d = 0; d < Dn; ++d)
          start.push_back({last[idx(d, s, t)]});
        if (D > 1) {
          const double bytes = stage_params[static_cast<std::size_t>(s)] / T * grad_elem;
          const int buckets = buckets_of(bytes);
          for (int b = 0; b < buckets; ++b)
            dp_collective(cfg.distributed_optimizer ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, s, t,
                          std::min(cap, bytes - cap * b), fmt::format("stage {} tp {} gradient bucket {}", s, t, b), TaskCategory::AllReduce,
                          start);
        }
        synced[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)] = {};
        for (int d = 0; d < Dn; ++d)
          synced[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)].push_back(
              start[static_cast<std::size_t>(d)].front());
      }
    }
    if (embedding_sync)
      for (int d = 0; d < Dn; ++d)
        for (int t = 0; t < Tn; ++t) {
          auto& first = synced.front()[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
          auto& lastst = synced.back()[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
          const auto call_of = [&](int r, int tr) {
            return CollectiveCall{CollectiveOp::AllReduce, {dev(r, 0, tr), dev(r, P - 1, tr)}, embedding_params / T * grad_elem,
                                  0, fmt::format("embedding gradients replica {} tp {}", r, tr), TaskCategory::EmbeddingGrad};
          };
          if (fold) {  // both ends are simulated: they join, every replica's and tensor rank's pair at once
            std::vector<ClockedComm> set;
            for (int r = 0; r < D; ++r)
              for (int tr = 0; tr < T; ++tr)
                set.push_back({call_of(r, tr)});
            const auto done = folded->add(g, set, {{0, 0, dev(0, 0, 0), {first}}, {0, 1, dev(0, P - 1, 0), {lastst}}},
                                          set.front().call.label, TaskCategory::EmbeddingGrad);
            first = done[0];
            lastst = done[1];
            continue;
          }
          const auto done = add_collective(g, topology, call_of(d, t), {{first}, {lastst}}, collectives).done;
          first = done[0];
          lastst = done[1];
        }
    std::vector<int> all;
    for (int s = 0; s < P; ++s) {
      const double shard = stage_params[static_cast<std::size_t>(s)] / T / (cfg.distributed_optimizer ? D : 1);
      const double step_s =
          !add_optimizer ? 0.0
          : roofline     ? optimizer_seconds(shard, mem, half_weights, topology.gpu, half_weights ? kMegatronStepPassBytes : 0,
                                             roofline_memory_efficiency(scenario.training.compute))
                         : optimizer_seconds(shard, mem, half_weights, topology.gpu);
      for (int t = 0; t < Tn; ++t) {
        std::vector<std::vector<int>> start;
        for (int d = 0; d < Dn; ++d) {
          const int after = synced[static_cast<std::size_t>(s)][static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
          const auto name = fmt::format("optimizer step (stage {})", s);
          start.push_back({step_s > 0 ? g.add_compute(dev(d, s, t), step_s, name, TaskCategory::Optimizer, {after})
                                      : g.add_delay(dev(d, s, t), 0.0, name, TaskCategory::Optimizer, {after})});
        }
        if (D > 1 && cfg.distributed_optimizer) {
          const double bytes = stage_params[static_cast<std::size_t>(s)] / T * param_elem;
          const int buckets = buckets_of(bytes);
          for (int b = 0; b < buckets; ++b)
            dp_collective(CollectiveOp::AllGather, s, t, std::min(cap, bytes - cap * b),
                          fmt::format("stage {} tp {} parameter bucket {}", s, t, b), TaskCategory::AllGather, start);
        }
        for (int d = 0; d < Dn; ++d) {
          last[idx(d, s, t)] = start[static_cast<std::size_t>(d)].front();
          all.push_back(last[idx(d, s, t)]);
        }
      }
    }
    plan.iteration_end.push_back(g.add_delay(plan.ranks[0], 0.0, fmt::format("iteration {} done", it), TaskCategory::Marker, dtsim::deps(all)));
  }
  g.set_iteration(0);

  // Memory: one walk per pipeline stage; every data- and tensor-parallel rank of a stage holds the same.
  int busiest_stage = 0;
  const std::vector<GpuMemory> stage_memory =
      parallel_stage_memory(scenario, model, topology.gpu, cfg, ranges, micro, loader.input_bytes_per_sample * batch,
                            plan.memory_curve, busiest_stage);
  plan.memory_curve_device = dev(0, busiest_stage, 0);
  for (int d = 0; d < Dn; ++d)
    for (int s = 0; s < P; ++s)
      for (int t = 0; t < Tn; ++t) {
        GpuMemory m = stage_memory[static_cast<std::size_t>(s)];
        m.device = dev(d, s, t);
        plan.memory.push_back(std::move(m));
      }
  plan.gpu_memory_bytes = topology.gpu.memory_bytes;

  std::string stages;
  for (int s = 0; s < V; ++s) {
    const auto& r = ranges[static_cast<std::size_t>(s)];
    stages += fmt::format("{}{}{} [{} .. {}] {:.1f} ms", s ? "; " : "", s, C > 1 ? fmt::format(" (GPU stage {})", stage_of(s)) : "",
                          model.layers[r.first].name, model.layers[r.last - 1].name,
                          (sc[static_cast<std::size_t>(s)].fwd + sc[static_cast<std::size_t>(s)].bwd) * M * 1e3);
  }
  plan.notes.push_back(fmt::format("compute: {}; {}{}", describe_compute_source(scenario), compute_spread_note(scenario),
                                   cfg.half_efficiency_samples > 0
                                       ? fmt::format("; a GPU runs b samples at b/(b+{}) of its large-batch rate",
                                                     cfg.half_efficiency_samples)
                                       : ""));
  plan.notes.push_back(fmt::format("{} data x {} pipeline x {} tensor parallel; batch {} per replica in {} micro-batches "
                                   "of {:.4g}, schedule {}",
                                   D, P, T, batch, M, micro,
                                   C > 1 ? fmt::format("interleaved 1F1B ({} model chunks per GPU)", C)
                                         : cfg.schedule == PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
  plan.notes.push_back("stages (compute per iteration): " + stages);
  if (P > 1)
    plan.notes.push_back(C > 1 ? fmt::format("ideal bubble (p-1)/(v m+p-1) = {:.1f}% with balanced stages and free links "
                                             "(Narayanan et al. 2021, section 2.2.2)",
                                             100.0 * (P - 1) / (C * M + P - 1))
                               : fmt::format("ideal bubble (p-1)/(m+p-1) = {:.1f}% with balanced stages and free links",
                                             100.0 * (P - 1) / (M + P - 1)));
  if (T > 1) {
    plan.notes.push_back(fmt::format(
        "tensor parallel as Megatron-LM sends it: per transformer layer two {} forward{} on the critical path, the "
        "vocabulary-parallel embedding and cross entropy; ranks laid out {}",
        cfg.sequence_parallel ? "ReduceScatter + AllGather pairs (sequence parallel)" : "AllReduces",
        cfg.tp_backward_overlap ? "" : " and two backward", to_string(cfg.order)));
    if (cfg.tp_backward_overlap)
      plan.notes.push_back(tp_overlap_note(cfg.sequence_parallel, topology.gpu, overlap_channels,
                                           *std::max_element(overlap_slowdown.begin(), overlap_slowdown.end())));
  } else if (D > 1 && P > 1)
    plan.notes.push_back(fmt::format("ranks laid out {} (innermost first)", to_string(cfg.order)));
  if (embedding_sync)
    plan.notes.push_back(fmt::format("tied word embedding: its gradient ({:.3g} MB per tensor rank) is AllReduced between the "
                                     "first and last stage every iteration",
                                     embedding_params / T * grad_elem / 1e6));
  if (scenario.training.activation_checkpointing != ActivationCheckpointing::None)
    plan.notes.push_back(checkpointing_note(scenario.training.activation_checkpointing));
  // The input: one DataLoader per replica, a batch per iteration, on the host beside every process.
  plan.notes.push_back(loader.describe() + " (one DataLoader per data-parallel replica, into its first stage)");
  plan.input_seconds_per_iteration = loader.batch_seconds(batch);
  if (const std::string host = loader.host_note(batch, plan.compute_per_iteration_s); !host.empty())
    plan.notes.push_back(host);
  plan.host = loader.host_summary(batch, plan.compute_per_iteration_s);
  if (add_optimizer)
    plan.notes.push_back(fmt::format("optimizer step memory-bound at {:.0f}% of HBM bandwidth{}{}",
                                     100 * (roofline ? roofline_memory_efficiency(scenario.training.compute) : kMemoryBoundFraction),
                                     roofline && half_weights ? " with Megatron's unscale, norm, copy and zeroing passes" : "",
                                     cfg.distributed_optimizer ? ", each replica on 1/dp of the parameters" : ""));
  // Stragglers dealt over the stages (jitter.hpp): each stage's GPUs one from each stratum.
  StepJitter jitter = step_jitter(scenario, static_cast<int>(plan.ranks.size()));
  std::vector<int> stage_of_rank(plan.ranks.size(), 0);
  for (int s = 0; s < P; ++s)
    for (int d = 0; d < D; ++d)
      for (int t = 0; t < T; ++t)
        stage_of_rank[idx(d, s, t)] = s;
  jitter.deal_over_groups(stage_of_rank, "pipeline stages");
  if (!fold) {
    plan.notes.push_back(apply_step_jitter(plan.graph, plan.ranks, jitter));
    return plan;
  }
  // Folded: the stages' representatives are the plan's GPUs, each at its D x T images' slowest pace.
  std::vector<std::vector<int>> images(static_cast<std::size_t>(P));
  for (std::size_t r = 0; r < stage_of_rank.size(); ++r)
    images[static_cast<std::size_t>(stage_of_rank[r])].push_back(static_cast<int>(r));
  const int all_gpus = static_cast<int>(plan.ranks.size());
  plan.notes.push_back(apply_folded_step_jitter(plan.graph, plan.stage_devices, images, jitter, all_gpus, plan.folded_jitter));
  folded->finish(plan.graph);
  plan.ranks = plan.stage_devices;
  plan.folded_from_gpus = all_gpus;
  plan.notes.push_back(folded_note(*folded, all_gpus, P, fmt::format("each stage's {} data-parallel x {} tensor-parallel GPUs", D, T)));
  return plan;
}

}  // namespace dtsim
