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
  /// Python + dispatcher cost of launching one layer's forward kernels, per replica (PyTorch eager
  /// overhead is of the order of 10 us per operator; a layer is 1-3 operators). Assumption.
  double launch_overhead_us_per_layer = 20;
  /// Python cost of replicate() per module per replica: module._replicate_for_data_parallel()
  /// (object __new__ and copies of its __dict__, _parameters, _buffers, _modules) and the setattr
  /// of each broadcast parameter (torch/nn/parallel/replicate.py); a few CPython attribute and
  /// dict operations of about 1-2 us each. Assumption, on the same Python lane (GIL).
  double replicate_us_per_module = 10;
  double coalesce_mb = 10;  ///< broadcast_coalesced / reduce_add_coalesced buffer_size (10 MiB)
};

DpOptions parse_dp_options(const JsonReader& strategy);

Plan build_dp_plan(const Scenario& scenario, const Topology& topology, const Model& model, int iterations, int warmup,
                   const CollectiveOptions& collectives = {});

}  // namespace dtsim
