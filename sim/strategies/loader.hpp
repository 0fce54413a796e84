// The input pipeline on the host, as PyTorch's DataLoader runs it: each training process has
// `workers` worker processes that read, decode and augment samples (per_sample_ms of CPU each, a
// whole batch per worker, so a process gets W batches per batch x per_sample time), prefetching
// ahead of the GPU; then the batch is copied from host memory to the GPU over the PCIe route from
// the CPU socket the GPU hangs off. With workers 0 the main process loads each batch itself,
// between steps. DataParallel's single process feeds every GPU through one loader; DDP's
// processes have one each.
//
// The CPU cost and the bytes per sample come from the dataset kind (models/datasets/*.json, chosen
// by training.loader.dataset or by the model), each with its source; the user may override both.
// The node's cores (topology host) are shared by every worker and every training process: when
// they are oversubscribed each worker gets its share, counting SMT threads as 0.3 of a core.
#pragma once

#include "sim/engine/task_graph.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/topology/topology.hpp"
#include "sim/util/json_reader.hpp"

#include <string>
#include <vector>

namespace dtsim {

/// Throughput of a second SMT thread on a busy core: Intel's "up to 30%" for Hyper-Threading
/// (Marr et al., "Hyper-Threading Technology Architecture and Microarchitecture", Intel Technology
/// Journal 6(1), 2002).
constexpr double kSmtThreadGain = 0.3;

/// Bounds of a dataset kind's costs, far above any real input: 10 s of CPU per sample (a video clip
/// decoded on the CPU takes ~100 ms), 10 GB per sample (a 3-D medical volume is ~1 GB).
constexpr double kMaxPerSampleMs = 1e4;
constexpr double kMaxInputBytesPerSample = 1e10;

/// What a dataset kind (models/datasets/NAME.json) costs per sample.
struct DatasetCost {
  double per_sample_s = 0;
  double input_bytes_per_sample = 0;
};

/// Reads a dataset kind, checked; the model's input elements scale a per-element byte count.
DatasetCost parse_dataset_kind(const JsonReader& kind, double input_elems);

struct LoaderSpec {
  bool enabled = false;
  std::string dataset;               ///< dataset kind (models/datasets/NAME.json)
  int workers = 0;                   ///< per training process; 0: loads in the main process
  bool workers_assumed = false;      ///< not given: one per host core left to the process
  double per_sample_s = 0;           ///< CPU time of one sample on one core
  bool per_sample_given = false;
  double input_bytes_per_sample = 0; ///< copied host -> GPU
  int processes_per_node = 1;
  double cpu_share = 1;              ///< of a core each worker gets (< 1: the host is oversubscribed)
  /// Seconds one process needs to produce a batch of `samples` at its steady rate.
  double batch_seconds(double samples) const
  {
    const double parallel = workers > 0 ? workers * cpu_share : 1.0;
    return samples * per_sample_s / parallel;
  }
  /// One line for the report: dataset, workers, cost, share of the host.
  std::string describe() const;
};

/// The loader of a scenario whose node runs `processes_per_node` training processes.
LoaderSpec parse_loader(const Scenario& scenario, const Model& model, const Topology& topology, int processes_per_node);

/// The most training processes (one per GPU of `ranks`) that share one node.
int processes_per_node(const Topology& topology, const std::vector<int>& ranks);

/// The CPU socket nearest to `gpu` (fewest hops); -1 when the topology has no CPU device.
int host_cpu_of(const Topology& topology, int gpu);

/// One process's loader: loads batches one after the other (prefetching ahead of the GPU).
class LoaderLane {
public:
  LoaderLane(const LoaderSpec& spec, int device, std::string who) : spec_(spec), device_(device), who_(std::move(who)) {}
  /// Adds the loading of a batch of `samples`; returns the task after which it is in host memory
  /// (-1 when no loader is modelled). Without workers the main process loads it only after
  /// `main_process_free` (its previous step): no prefetching.
  int load(TaskGraph& graph, double samples, const std::vector<int>& main_process_free);

private:
  const LoaderSpec& spec_;
  int device_;
  std::string who_;
  int last_ = -1;
};

/// Copies `samples` samples' input from the host to `gpu` after `after`; returns the transfer (or
/// -1 when no loader is modelled or there is nothing to copy).
int add_input_copy(TaskGraph& graph, const Topology& topology, const LoaderSpec& spec, int gpu, double samples,
                   std::vector<int> after, const std::string& name);

}  // namespace dtsim
