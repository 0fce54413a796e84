// ZeRO++'s quantized gradient reduction (qgZ, zero_quantized_gradients) of one ZeRO-3 gradient
// bucket, as deepspeed/runtime/comm/coalesced_collectives.py all_to_all_quant_reduce runs it from
// stage3.py's __avg_scatter_grads on more than one node: tensor after tensor, from DeepSpeed's
// reduce stream, a weight matrix whose size divides by 2 x GPUs is quantized to int4 with an fp32
// scale per group of max(rows, columns, GPUs) (swizzle_quant), all-to-all'd inside the node,
// reduced and requantized (quantized_reduction), all-to-all'd across the nodes, then dequantized
// and averaged; any other tensor (a bias, a norm's weight: dim 1) is reduce-scattered on its own
// (reduce_scatter_coalesced). The kernels are memory-bound delays on the reduce stream.
#pragma once

#include "sim/model/model.hpp"
#include "sim/strategies/sharded_run.hpp"
#include "sim/topology/gpu_spec.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace dtsim {

struct GradTensor {
  std::size_t layer = 0;
  double elements = 0;
  /// A weight matrix: a linear, embedding or convolution layer's first tensor (PyTorch registers
  /// the weight before the bias); everything else has one dimension.
  bool matrix = false;
};

/// The model's gradient tensors in the order ZeRO's buckets hold them (assign_capped_buckets): the
/// last layer first, each layer's tensors last first.
std::vector<GradTensor> gradient_tensors(const Model& model);

/// Whether qgZ quantizes the tensor on `gpus` data-parallel ranks (all_to_all_quant_reduce's test).
bool quantized_path(const GradTensor& tensor, int gpus);

/// A collective of the plan on `groups` (ZeRO's tallying wrapper of ShardedRun::collective).
using ZeroCollective = std::function<std::vector<int>(CollectiveOp op, const std::vector<std::vector<int>>& groups, double bytes,
                                                      const std::string& label, const std::string& what, TaskCategory category,
                                                      std::vector<std::vector<int>> start, ShardedRun::Stream stream)>;

struct QgzSetup {
  const Model& model;
  const GpuSpec& gpu;
  int gpus = 1;                    // data-parallel ranks
  int per_node = 1;                // of them on each node
  double gradient_bytes = 2;       // per element, in the communication dtype
  const std::vector<std::vector<int>>& all;           // every rank (the 1-D tensors' ReduceScatter)
  const std::vector<std::vector<int>>& inside_nodes;  // each node's ranks
  const std::vector<std::vector<int>>& across_nodes;  // the ranks at one position on every node
};

/// Adds the reduction of tensors[first, first + count) once their gradients are ready.
void reduce_quantized(ShardedRun& run, const ZeroCollective& collective, const QgzSetup& setup,
                      const std::vector<GradTensor>& tensors, std::size_t first, std::size_t count);

}  // namespace dtsim
