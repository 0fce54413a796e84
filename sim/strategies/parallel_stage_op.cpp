// One micro-batch's forward or backward on one stage of a parallel plan (parallel_build.hpp).
#include "sim/strategies/parallel_build.hpp"
#include "sim/strategies/task_util.hpp"

#include <fmt/format.h>

namespace dtsim {

ReplicaFlow::ReplicaFlow(int virtual_stages, int microbatches, int tensor)
    : fwd_in(static_cast<std::size_t>(virtual_stages),
             std::vector<std::vector<int>>(static_cast<std::size_t>(microbatches), std::vector<int>(static_cast<std::size_t>(tensor), -1))),
      bwd_in(fwd_in),
      fwd_done(static_cast<std::size_t>(virtual_stages), std::vector<bool>(static_cast<std::size_t>(microbatches), false))
{
}

bool stage_op_ready(const ParallelBuild& b, int s, const ChunkOp& op, const ReplicaFlow& flow)
{
  const int vs = op.chunk * b.P + s;
  const auto si = static_cast<std::size_t>(vs);
  const auto ii = static_cast<std::size_t>(op.micro);
  return op.backward ? (vs == b.V - 1 ? flow.fwd_done[si][ii] : flow.bwd_in[si][ii][0] >= 0)
                     : (vs == 0 || flow.fwd_in[si][ii][0] >= 0);
}

void add_stage_op(ParallelBuild& b, int d, int s, const ChunkOp& op, ReplicaFlow& flow)
{
  TaskGraph& g = b.plan.graph;
  const int D = b.D, T = b.T, V = b.V, Tn = b.Tn;
  const bool fold = b.fold;
  const bool backward = op.backward;  // plain locals: the lambdas below capture them (clang 14)
  const int i = op.micro;
  const int vs = op.chunk * b.P + s;  // its virtual stage
  const auto si = static_cast<std::size_t>(vs);
  const auto ii = static_cast<std::size_t>(i);
  const auto& c = b.sc[si];
  const std::string at_stage = b.stage_name(vs);
  // Each tensor rank's chain: the stage's pieces in order (backward: reversed, each after its
  // recomputation), each piece's collectives among the stage's tensor ranks after it.
  std::vector<std::vector<int>> at(static_cast<std::size_t>(Tn));  // per rank: what its next task waits on
  for (int t = 0; t < Tn; ++t) {
    auto& deps = at[static_cast<std::size_t>(t)];
    deps = {b.last[b.idx(d, s, t)]};
    const int data = backward ? flow.bwd_in[si][ii][static_cast<std::size_t>(t)] : flow.fwd_in[si][ii][static_cast<std::size_t>(t)];
    if (data >= 0)
      deps.push_back(data);
  }
  g.set_group(i);
  const auto compute = [&](double seconds, TaskCategory what, const std::string& piece) {
    for (int t = 0; t < Tn; ++t) {
      auto& deps = at[static_cast<std::size_t>(t)];
      deps = {g.add_compute(b.dev(d, s, t), seconds,
                            fmt::format("{} micro-batch {} {}{}{}", what, i, at_stage, T > 1 ? fmt::format(" tp {}", t) : "", piece),
                            what, dtsim::deps(std::move(deps)))};
    }
  };
  const auto tp_collectives = [&](const std::vector<TpCollective>& list, const char* what) {
    for (const auto& tc : list) {
      const auto call_of = [&](int replica) {
        std::vector<int> group;
        for (int t = 0; t < T; ++t)
          group.push_back(b.dev(replica, s, t));
        return CollectiveCall{tc.op, group, tc.bytes, 0, fmt::format("tp {} mb {} {}", what, i, at_stage),
                              TaskCategory::TensorParallel};
      };
      if (fold) {  // every replica's group of this stage at once
        std::vector<ClockedComm> set;
        for (int r = 0; r < D; ++r)
          set.push_back({call_of(r)});
        at[0] = {b.folded->add(g, set, {{0, 0, b.dev(0, s, 0), at[0]}}, set.front().call.label, TaskCategory::TensorParallel)[0]};
        continue;
      }
      const auto done = add_collective(g, b.topology, call_of(d), at, b.collectives).done;
      for (int t = 0; t < T; ++t)
        at[static_cast<std::size_t>(t)] = {done[static_cast<std::size_t>(t)]};
    }
  };
  // Megatron-LM 2021-2022 (ParallelBuild::pipeline_scatter_gather): the input (forward) or the output's
  // gradient (backward) came as 1/T per tensor rank; megatron/p2p_communication.py _communicate gathers
  // it after the receive and torch.cuda.synchronize(), before returning it to the schedule's forward or
  // backward step: gather_split_1d_tensor, one torch.distributed._all_gather_base of the whole tensor
  // over the tensor-model-parallel group, on the rank's critical path like the other TP collectives.
  if (b.pipeline_scatter_gather()) {
    if (!backward && vs > 0)
      tp_collectives({{CollectiveOp::AllGather, b.sc[si - 1].send_bytes}}, "pipeline input gather");
    if (backward && vs + 1 < V)
      tp_collectives({{CollectiveOp::AllGather, c.send_bytes}}, "pipeline gradient gather");
  }
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
    for (const auto& beside : piece.beside) {  // issued together, both waited for
      const auto issued = at;
      compute(beside.compute_s, TaskCategory::Backward, where + " (GEMM beside tp)");
      const auto computed = at;
      at = issued;
      tp_collectives({beside.collective}, "bwd");
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
                         : g.add_delay(b.dev(d, s, t), 0.0, fmt::format("tp joined mb {} {}", i, at_stage), TaskCategory::Marker,
                                       dtsim::deps(std::move(deps)));
  }
  // A boundary send of every replica's tensor ranks at once, timed with them (folded).
  const auto folded_send = [&](int to_vs, double bytes, const std::string& name, TaskCategory category) {
    std::vector<ClockedComm> set;
    for (int r = 0; r < D; ++r)
      for (int t = 0; t < T; ++t)
        set.push_back({CollectiveCall{CollectiveOp::SendRecv, {b.dev(r, s, t), b.dev(r, b.stage_of(to_vs), t)}, bytes, 0, name, category},
                       true});
    return b.folded->add_send(g, set, {0, 0, b.dev(0, s, 0), {end[0]}}, b.dev(0, b.stage_of(to_vs), 0), name, category);
  };
  if (fold) {
    b.last[b.idx(0, s, 0)] = end[0];
    if (!backward && vs + 1 < V)
      flow.fwd_in[si + 1][ii][0] = folded_send(vs + 1, b.boundary_bytes(vs), fmt::format("activations mb {} {} -> {}", i, at_stage, vs + 1),
                                               TaskCategory::Activation);
    if (backward && vs > 0)
      flow.bwd_in[si - 1][ii][0] = folded_send(vs - 1, b.boundary_bytes(vs - 1),
                                               fmt::format("gradients mb {} {} -> {}", i, at_stage, vs - 1), TaskCategory::ActivationGrad);
  }
  for (int t = 0; t < Tn && !fold; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    b.last[b.idx(d, s, t)] = end[ti];
    if (!backward && vs + 1 < V)
      flow.fwd_in[si + 1][ii][ti] = g.add_transfer(b.dev(d, s, t), b.dev(d, b.stage_of(vs + 1), t), b.boundary_bytes(vs),
                                                   fmt::format("activations mb {} {} -> {}", i, at_stage, vs + 1),
                                                   TaskCategory::Activation, {end[ti]});
    if (backward && vs > 0)
      flow.bwd_in[si - 1][ii][ti] = g.add_transfer(b.dev(d, s, t), b.dev(d, b.stage_of(vs - 1), t), b.boundary_bytes(vs - 1),
                                                   fmt::format("gradients mb {} {} -> {}", i, at_stage, vs - 1),
                                                   TaskCategory::ActivationGrad, {end[ti]});
  }
  g.set_group(-1);
  if (!backward)
    flow.fwd_done[si][ii] = true;
}

}  // namespace dtsim
