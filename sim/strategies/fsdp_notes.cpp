// See fsdp_notes.hpp.
#include "sim/strategies/fsdp_notes.hpp"

#include <fmt/format.h>

#include <map>

namespace dtsim {

void add_fsdp_comm_per_iteration(const FsdpOptions& opt, const FsdpPlanFacts& f, std::vector<CommGroup>& out)
{
  const FsdpUnitBytes& b = *f.units;
  const FsdpGroups& g = *f.groups;
  const int U = static_cast<int>(b.params.size()), M = f.micro_steps, syncs = f.syncs, S = f.shard;
  double all_params = 0, all_gathered = 0, unit_gathered = 0;  // per tensor rank: params, gathered bytes
  for (std::size_t u = 0; u < static_cast<std::size_t>(U); ++u) {
    all_params += b.params[u];
    all_gathered += b.gather_bytes[u];
    if (u != 0)
      unit_gathered += b.gather_bytes[u];
  }
  if (f.sharded) {
    const int groups = static_cast<int>(g.shard.size());
    const int gathering_steps = f.kept_across_micro_steps ? 1 : M;  // micro-steps that AllGather in forward
    out.push_back({"parameters (forward)", "all_gather", all_gathered * gathering_steps, U * gathering_steps, groups});
    if (f.gather_backward)
      out.push_back({"parameters (backward)", "all_gather", unit_gathered * M, (U - 1) * M, static_cast<int>(g.backward.size())});
    out.push_back({"gradients", "reduce_scatter", all_params * f.reduce_bytes * syncs, U * syncs, groups});
    if (!g.replicate.empty())
      out.push_back({"gradient shards across replicas", "all_reduce", all_params / S * f.reduce_bytes * syncs, U * syncs,
                     static_cast<int>(g.replicate.size())});
  } else if (!g.reduce.empty()) {
    out.push_back({"gradients", "all_reduce", all_params * f.reduce_bytes * syncs, U * syncs, static_cast<int>(g.reduce.size())});
  }
  if (f.tensor > 1) {  // the tensor ranks' collectives, as the Megatron-style builders list them
    std::map<CollectiveOp, std::pair<double, int>> per_op;  // bytes and calls per micro-batch, both directions
    for (const auto& segment_pieces : *f.pieces)
      add_tensor_parallel_traffic(segment_pieces, per_op);
    for (const auto& [op, sum] : per_op)
      out.push_back({"tensor-parallel", to_string(op), sum.first * M, sum.second * M, f.data});
  }
  if (opt.cpu_offload) {
    const int h2d_calls = U * M + (f.gather_backward && f.backward == S ? (U - 1) * M : 0);
    out.push_back({"parameter shards (CPU offload)", "host -> GPU", f.h2d_bytes, h2d_calls, f.ranks});
    out.push_back({"gradient shards (CPU offload)", "GPU -> host", f.d2h_bytes, U * syncs, f.ranks});
  }
}

std::string fsdp_plan_note(const FsdpOptions& opt, const FsdpPlanFacts& f)
{
  const int U = static_cast<int>(f.units->params.size()), S = f.shard, D = f.data, K = f.backward;
  return fmt::format(
      "FSDP{} {}: {} units (root + {}), sharded over {} rank{}{}{}; parameters gathered in {}, gradients reduced in {}; {}",
      opt.version, to_string(opt.sharding), U, U - 1, S, S == 1 ? "" : "s",
      D / S > 1 ? fmt::format(" x {} replicas", D / S) : "",
      opt.sharded_dtype != "fp32"
          ? fmt::format(" in {} (weights, gradients and optimizer states: no fp32 master weights)", opt.sharded_dtype)
          : "",
      opt.param_dtype == "fp8" ? "fp8 (the blocks' linear weights, torchao's float8 all-gather; the rest in bf16)" : opt.param_dtype,
      opt.reduce_dtype,
      !f.sharded ? (f.unshards ? fmt::format("a shard group of one rank: gathered into its own buffers without a collective, "
                                             "gradients copied through them{}", D > 1 ? ", then AllReduced per unit" : "")
                               : "no sharding: AllReduce per unit")
      : f.gather_backward
          ? fmt::format("AllGather again in backward{} ({} prefetch){}", K < S ? fmt::format(" over {} ranks", K) : "",
                        opt.version == 2 ? "one-unit explicit" : to_string(opt.backward_prefetch),
                        f.limited ? ", at most two AllGathers ahead of the frees" : "")
          : "parameters kept from forward to backward");
}

std::string fsdp_micro_steps_note(const FsdpOptions& opt, int micro_steps, bool host_sync)
{
  return fmt::format(
      "{} micro-steps per optimizer step, {}{}", micro_steps,
      opt.no_sync ? "gradients reduced in the last only (no_sync)" : "gradients reduced in each",
      host_sync ? "; the host waits for the GPU after each (training.host_sync): none of the next one's AllGathers is "
                  "issued before it ends"
                : "");
}

std::string fsdp_tensor_parallel_note(const FsdpOptions& opt, int tensor, double chunk_cat_s)
{
  std::string copies;
  if (chunk_cat_s > 0)
    copies = fmt::format("; DTensor's copy of the whole tensor around each AllGather and ReduceScatter (torch.cat of "
                         "the group's chunks: NCCL works along dim 0, the tensors are sharded on the sequence or the "
                         "vocabulary) {:.2f} ms per iteration on the compute stream",
                         chunk_cat_s * 1e3);
  return fmt::format("tensor parallel {} inside each data rank (torchtitan 2-D){}{}", tensor,
                     opt.sequence_parallel ? ", sequence parallel" : "", copies);
}

}  // namespace dtsim
