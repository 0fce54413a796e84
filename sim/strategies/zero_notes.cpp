// See zero_notes.hpp.
#include "sim/strategies/zero_notes.hpp"

#include <fmt/format.h>

namespace dtsim {

std::vector<std::string> zero_plan_notes(const ZeroOptions& opt, const ZeroPlanFacts& f)
{
  std::vector<std::string> notes;
  const int n = f.gpus, S = f.shard, H = f.secondary;
  if (opt.stage < 3)
    notes.push_back(fmt::format(
        "ZeRO-{}: {} gradient buckets of at most {:.3g} elements {} {}{}; optimizer on 1/{} of the parameters, then {}",
        opt.stage, f.buckets, opt.reduce_bucket_elems,
        f.reduce_to_owners ? fmt::format("reduced to their partitions' owners ({} Reduces: use_multi_rank_bucket_allreduce false)", f.reduces)
                           : std::string("AllReduced"),
        f.hooks ? "as they fill in backward" : "after the last backward", opt.overlap_comm ? " (overlap_comm)" : " on the compute stream",
        n,
        // runtime/utils.py all_gather_into_tensor_dp_groups: one call per parameter group, none for a
        // data-parallel world of one (allgather_bucket_size unused on this path).
        n > 1 ? fmt::format("{:.0f} AllGather(s) of the updated parameters (one per parameter group)", f.gather_pieces)
              : std::string("no AllGather of the updated parameters (one GPU)")));
  else if (f.fetches)
    notes.push_back(fmt::format(
        "ZeRO-3: {} modules gathered for forward, {} again for backward ({} stay gathered between: {} used again within "
        "stage3_max_reuse_distance {:.3g} elements, the others reached by the prefetch before their release); prefetch "
        "{:.3g} elements per fetch, up to {:.3g} elements gathered at once (stage3_max_live_parameters {:.3g}); {:.3g} of "
        "{:.3g} parameters partitioned, smaller tensors persist (whole on every GPU, gathered again after each step); "
        "gradients reduce-scattered in buckets of {:.3g} elements{}",
        f.fetches->forward_gathers(), f.fetches->backward_gathers(), f.fetches->forward_uses - f.fetches->backward_gathers(), f.reused,
        opt.max_reuse_distance, opt.prefetch_bucket_elems, f.fetches->peak_elements, opt.max_live_parameters, f.partitioned, f.params,
        opt.reduce_bucket_elems, opt.overlap_comm ? " (overlap_comm)" : " on the compute stream"));
  if (opt.quantized_weights && opt.stage == 3)
    notes.push_back(fmt::format("qwZ: parameters gathered as int8 with an fp32 scale per {:.0f} elements of each rank's part, "
                                "dequantized before use: {:.4f} s per iteration on each GPU (memory-bound)",
                                f.quant_group_elements, f.dequantize_s));
  if (f.qgz)
    notes.push_back(fmt::format("qgZ: {} weight matrices' gradients quantized to int4 and reduced by an all-to-all inside each "
                                "node of {} GPUs, then one across the {} nodes; the other {} tensors reduce-scattered; one "
                                "tensor after another from DeepSpeed's reduce stream",
                                f.quantized_tensors, f.per_node, n / f.per_node, f.gradient_tensors - f.quantized_tensors));
  else if (opt.quantized_gradients && opt.stage == 3)
    notes.push_back("qgZ: on one node DeepSpeed reduce-scatters the gradient buckets (stage3.py, num_nodes > 1)");
  if (S < n)
    notes.push_back(fmt::format("MiCS: parameters, gradients and optimizer states sharded over {} groups of {} consecutive GPUs, "
                                "replicated across them; each gradient bucket's shard AllReduced across the {} replicas at the "
                                "accumulation boundary", n / S, S, n / S));
  if (H < S)
    notes.push_back(fmt::format("hpZ: a secondary copy of the partitioned parameters over {} groups of {} consecutive GPUs "
                                "({:.3g} elements per GPU) serves the backward's gathers and the forward's after the first "
                                "micro-step; the first forward gathers over all {}",
                                n / H, H, f.secondary_elements, n));
  return notes;
}

}  // namespace dtsim
