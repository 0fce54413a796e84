// See zero_quantized_gradients.hpp.
#include "sim/strategies/zero_quantized_gradients.hpp"

#include "sim/strategies/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim {

std::vector<GradTensor> gradient_tensors(const Model& model)
{
  std::vector<GradTensor> out;
  for (std::size_t l = model.layers.size(); l-- > 0;) {
    const auto& layer = model.layers[l];
    const bool weights = layer.kind == "linear" || layer.kind == "embedding" || layer.kind == "conv";
    for (std::size_t t = layer.param_tensors.size(); t-- > 0;)
      out.push_back({l, static_cast<double>(layer.param_tensors[t]), weights && t == 0});
  }
  return out;
}

bool quantized_path(const GradTensor& tensor, int gpus)
{
  return tensor.matrix && std::fmod(tensor.elements, 2.0 * gpus) == 0;
}

void reduce_quantized(ShardedRun& run, const ZeroCollective& collective, const QgzSetup& setup,
                      const std::vector<GradTensor>& tensors, std::size_t first, std::size_t count)
{
  const double N = setup.gpus, L = setup.per_node, ge = setup.gradient_bytes;
  const auto kernel_s = [&](double bytes) { return memory_bound_seconds(bytes, setup.gpu); };
  // A transformer's weight matrices have the hidden size as one dimension.
  const double hidden = setup.model.arch.count("hidden") ? setup.model.arch.at("hidden") : 0.0;
  run.stream_waits_for_compute(ShardedRun::Stream::Reduce);
  run.stream_waits_for_compute(ShardedRun::Stream::Shard);
  std::vector<std::vector<int>> after(static_cast<std::size_t>(setup.gpus));  // the chain's last step, per rank
  const auto chain = [&](const std::vector<int>& done) {
    for (const int r : run.active())
      after[static_cast<std::size_t>(r)] = {done[static_cast<std::size_t>(r)]};
  };
  const auto cat = TaskCategory::ReduceScatter;
  const auto reduce = ShardedRun::Stream::Reduce;
  for (std::size_t i = first; i < first + count; ++i) {
    const GradTensor& t = tensors[i];
    const double T = t.elements;
    const std::string& name = setup.model.layers[t.layer].name;
    if (!quantized_path(t, setup.gpus)) {
      chain(collective(CollectiveOp::ReduceScatter, setup.all, T * ge, "reduce-scatter gradient of " + name, "gradients", cat, after,
                       ShardedRun::Stream::Shard));
      continue;
    }
    const double groups = std::max(N, hidden > 0 && std::fmod(T, hidden) == 0 ? std::max(hidden, T / hidden) : std::sqrt(T));
    chain(run.stream_delay(reduce, kernel_s(T * ge + T / 2 + groups * 4), "qgZ quantize " + name, cat, after));
    chain(collective(CollectiveOp::AllToAll, setup.inside_nodes, T / 2, "qgZ all-to-all inside nodes " + name,
                     "gradients (qgZ int4 inside nodes)", cat, after, reduce));
    chain(collective(CollectiveOp::AllToAll, setup.inside_nodes, groups * 4, "qgZ scales inside nodes " + name,
                     "gradient scales (qgZ inside nodes)", cat, after, reduce));
    chain(run.stream_delay(reduce, kernel_s(T / 2 + groups * 4 + T / (2 * L)), "qgZ reduce " + name, cat, after));
    chain(collective(CollectiveOp::AllToAll, setup.across_nodes, T / (2 * L), "qgZ all-to-all across nodes " + name,
                     "gradients (qgZ int4 across nodes)", cat, after, reduce));
    chain(collective(CollectiveOp::AllToAll, setup.across_nodes, groups / L * 4, "qgZ scales across nodes " + name,
                     "gradient scales (qgZ across nodes)", cat, after, reduce));
    chain(run.stream_delay(reduce, kernel_s(T / (2 * L) + 2 * (T / L) * ge + T / N * ge), "qgZ dequantize and average " + name, cat,
                           after));
  }
}

}  // namespace dtsim
