// PyTorch nn.DataParallel: one process, one node. Per iteration (torch/nn/parallel/data_parallel.py):
// the batch is loaded on the host and copied to GPU0; scatter sends each GPU its chunk from GPU0;
// replicate broadcasts parameters and buffers from GPU0 (broadcast_coalesced, 10 MiB chunks, NCCL
// broadcast); parallel_apply runs the forward of every replica in its own Python thread (kernel
// launches serialised by the GIL: launch_overhead_us_per_layer per layer per replica on one Python
// lane); gather copies every output to GPU0; the loss is computed on GPU0; its gradient is scattered
// back; backward runs on every GPU (autograd's C++ threads, no GIL); reduce_add sums all gradients
// onto GPU0 (reduce_add_coalesced, 10 MiB chunks, NCCL reduce) once every replica is done; the
// optimizer steps on GPU0 only. GPU0 is the hub of every transfer.
#pragma once

#include "sim/collectives/collective_options.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/plan.hpp"
#include "sim/topology/topology.hpp"

namespace dtsim {

struct DpOptions {
  /// Python + dispatcher cost of launching one layer's forward kernels, per replica, on the one Python
  /// lane (GIL). Measured (calibration/measured/h200-1gpu-2026-11-26/host_costs*.json,
  /// calibration/bench/host_costs.py): the host time of a torchvision ResNet-50 forward at batch 1
  /// (PyTorch 2.11, Python 3.12, a 16-core Xeon VM) over the 109 layers of models/resnet50.json:
  /// 45.7 and 49.6 us per layer in fp32, 48.2 and 83.9 with float16 autocast (two runs).
  double launch_overhead_us_per_layer = 48;
  /// Python cost of replicate() per replica, per layer of the model table (module._replicate_for_
  /// data_parallel() of every nn.Module and the setattr of each broadcast parameter,
  /// torch/nn/parallel/replicate.py), on the same Python lane. Measured as above: replicate() of
  /// ResNet-50 onto two devices minus onto one, 3.05 and 4.27 ms per added replica, over 109 layers
  /// (151 nn.Modules): 28 and 39 us per layer.
  double replicate_us_per_module = 33;
  double coalesce_mb = 10;  ///< broadcast_coalesced / reduce_add_coalesced buffer_size (10 MiB)
};

DpOptions parse_dp_options(const JsonReader& strategy);

Plan build_dp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                   const CollectiveOptions& collectives = {});

}  // namespace dtsim
