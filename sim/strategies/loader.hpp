// The input pipeline on the host: a PyTorch DataLoader whose `workers` processes decode and augment
// samples in parallel (per_sample_ms of CPU each), prefetching ahead of the GPU, then the copy of the
// batch from host memory to the GPU over the PCIe route from the CPU socket the GPU hangs off.
// Given as training.loader {"workers": W, "per_sample_ms": c [, "input_bytes_per_sample": B]};
// without it no input pipeline is modelled (batches appear on the GPUs for free). A process loads
// a batch of S samples in S * c / W; DataParallel's single process feeds every GPU through one
// loader, DDP's processes have one each.
#pragma once

#include "sim/engine/task_graph.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/topology/topology.hpp"

#include <string>
#include <vector>

namespace dtsim {

struct LoaderSpec {
  bool enabled = false;
  int workers = 1;
  double per_sample_s = 0;
  double input_bytes_per_sample = 0;  ///< default: model input elements x 4 (float tensors)
  double batch_seconds(double samples) const { return samples * per_sample_s / workers; }
};

LoaderSpec parse_loader(const Scenario& scenario, const Model& model);

/// The CPU socket nearest to `gpu` (fewest hops); -1 when the topology has no CPU device.
int host_cpu_of(const Topology& topology, int gpu);

/// One process's loader: loads batches one after the other (prefetching ahead of the GPU).
class LoaderLane {
public:
  LoaderLane(const LoaderSpec& spec, int device, std::string who) : spec_(spec), device_(device), who_(std::move(who)) {}
  /// Adds the loading of a batch of `samples`; returns the task after which it is in host memory
  /// (-1 when no loader is modelled).
  int load(TaskGraph& graph, double samples);

private:
  const LoaderSpec& spec_;
  int device_;
  std::string who_;
  int last_ = -1;
};

/// Copies `samples` samples' input from the host to `gpu` after `after`; returns the transfer (or
/// -1 when no loader is modelled, `after` empty and nothing to wait for).
int add_input_copy(TaskGraph& graph, const Topology& topology, const LoaderSpec& spec, int gpu, double samples,
                   std::vector<int> after, const std::string& name);

}  // namespace dtsim
