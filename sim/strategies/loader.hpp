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
// per_sample_ms is the cost with one core of the host busy. The node's cores are shared by every
// thread on it (host_model.hpp): workers, each process's main and pin-memory threads, DataParallel's
// autograd threads, NCCL's proxy threads across nodes. A sample costs more as the cores fill (the
// load curve: calibrated, else the default) and each thread gets its share of a core when SMT
// siblings or a queue share them.
#pragma once

#include "sim/model/model.hpp"
#include "sim/plan/task_graph.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/strategies/host_model.hpp"
#include "sim/topology/topology.hpp"
#include "sim/util/json_reader.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace dtsim {

/// Rate at which a pin-memory thread copies a batch into page-locked memory: about 10 GB/s, one
/// core's STREAM Copy on current Xeon servers (J. McCalpin, STREAM benchmark results). Its thread
/// is busy for input bytes / this rate per batch (torch/utils/data/_utils/pin_memory.py copies each
/// batch on one thread). The CUDA driver's staging of a copy from or to pageable memory is the same
/// one-thread memcpy (ShardedRun::host_copy); bandwidthTest measured 10.0 / 10.8 GB/s pageable
/// against 25.7 / 25.8 GB/s pinned on a DGX A100 (tests/data/calibration/bandwidth/
/// h2d_pinned_vs_pageable_DGXA100_vs_DellPCIeA100_gengwg.txt).
constexpr double kPinCopyBytesPerS = 10e9;

/// Rate of a copy between a GPU and pageable host memory (`to_host`: GPU -> host): the host's
/// measured one (a calibration's bandwidthTest rows), else the driver's one-thread staging at
/// kPinCopyBytesPerS.
inline double pageable_copy_bytes_per_s(const Topology::Host& host, bool to_host)
{
  const double measured = to_host ? host.pageable_d2h_bytes_per_s : host.pageable_h2d_bytes_per_s;
  return measured > 0 ? measured : kPinCopyBytesPerS;
}

/// Host time of backward per layer on autograd's per-device thread (torch/csrc/autograd/engine.cpp
/// runs one such thread per CUDA device, no GIL), measured 79-97 us
/// (calibration/measured/h200-1gpu-2026-11-26/host_costs.json): DataParallel's replicas keep these
/// threads busy for layers x this per iteration.
constexpr double kAutogradHostSecondsPerLayer = 88e-6;

/// Bounds of a dataset kind's costs, far above any real input: 10 s of CPU per sample (a video clip
/// decoded on the CPU takes ~100 ms), 10 GB per sample (a 3-D medical volume is ~1 GB).
constexpr double kMaxPerSampleMs = 1e4;
constexpr double kMaxInputBytesPerSample = 1e10;

/// What a dataset kind (models/datasets/NAME.json) costs per sample.
struct DatasetCost {
  double per_sample_s = 0;
  double input_bytes_per_sample = 0;
  double host_memory_bytes_per_sample = 0;  ///< DRAM traffic of one sample's decode, augment, collate, pinning (0: not given)
};

/// Reads a dataset kind, checked; the model's input elements scale a per-element byte count.
DatasetCost parse_dataset_kind(const JsonReader& kind, double input_elems);

/// What else than the loader runs on the host, by strategy.
struct HostExtras {
  double python_threads = 0;      ///< busy threads beyond each process's main thread (DataParallel's autograd)
  bool nccl_over_network = false; ///< a collective leaves the node: each process's NCCL proxy thread polls
  /// Samples/s one process's GPU work consumes at most (0: unknown). Workers whose prefetch queue
  /// is full wait (DataLoader's prefetch_factor batches per worker), so they are busy only for the
  /// share of their output the GPU takes.
  double gpu_samples_per_s = 0;
  /// The most training processes whose GPUs hang off one CPU socket (0: the node's spread evenly).
  int processes_per_socket = 0;
  /// The most training processes that run a DataLoader (its workers and pin-memory thread) on one
  /// node and on one CPU socket (0: every process): Megatron builds the data iterator only on tensor
  /// rank 0 of the first and last pipeline stages (pretrain_gpt.py is_dataset_built_on_rank) and
  /// broadcasts the batch.
  int loading_per_node = 0;
  int loading_per_socket = 0;
};

struct LoaderSpec {
  bool enabled = false;
  std::string dataset;               ///< dataset kind (models/datasets/NAME.json)
  int workers = 0;                   ///< per training process; 0: loads in the main process
  bool workers_assumed = false;      ///< not given: one per host core left to the process
  double per_sample_s = 0;           ///< CPU time of one sample on one core
  bool per_sample_given = false;
  double input_bytes_per_sample = 0; ///< copied host -> GPU
  int processes_per_node = 1;
  /// Placement, as launchers bind processes (training.loader.affinity): "none" (torchrun's default:
  /// every thread may run on every core of the node), "socket" (DLE gpu_affinity's 'socket': each
  /// process and its workers on the cores of its GPU's socket), "socket_unique" (gpu_affinity's
  /// 'socket_unique_contiguous' / 'interleaved': each process an equal, exclusive share of its
  /// socket's physical cores with their SMT siblings). The host model then runs on that domain.
  std::string affinity = "none";
  int domain_processes = 1;          ///< training processes sharing one domain of cores
  int domain_loading = 1;            ///< of those, the most that run a DataLoader
  int memory_processes = 1;          ///< processes sharing memory_bytes_per_s
  double cpu_share = 1;              ///< of a core each worker gets (< 1: SMT siblings or a queue share the cores)
  double load_ratio = 1;             ///< the load curve: cost of a sample with the cores this busy over one busy
  double host_memory_bytes_per_sample = 0;  ///< DRAM traffic per sample (dataset kind; 0: not modelled)
  double memory_bytes_per_s = 0;     ///< the node's peak DRAM bandwidth (0: not given)
  HostCpus cpus;                     ///< the node's cores and load curve
  HostExtras extras;
  HostDemand demand;                 ///< busy threads per node, by kind
  HostLoad host;                     ///< the node's cores under this loader and everything beside it
  /// Seconds one process needs to produce a batch of `samples` at its steady rate.
  double batch_seconds(double samples) const { return std::max(cpu_seconds(samples), memory_seconds(samples)); }
  /// The workers' CPU time for a batch, at their share of a core and the host's load.
  double cpu_seconds(double samples) const
  {
    const double parallel = workers > 0 ? workers * cpu_share : cpu_share;
    return samples * per_sample_s * load_ratio / parallel;
  }
  /// The node's DRAM bandwidth, shared by its processes' loaders, for a batch (0 when not modelled).
  double memory_seconds(double samples) const
  {
    return memory_bytes_per_s > 0 ? samples * host_memory_bytes_per_sample * memory_processes / memory_bytes_per_s : 0.0;
  }
  /// The same loader with `w` workers per process: the host's load recomputed.
  LoaderSpec with_workers(int w) const;
  /// One line for the report: dataset, workers, cost, share of the host.
  std::string describe() const;
  /// The host's line for the report: busy threads on the cores, the limit when the host slows the
  /// loader, and how many workers per process would produce a batch of `samples` within
  /// `gpu_seconds` (the GPU's own time per batch): more workers stop helping past that.
  std::string host_note(double samples, double gpu_seconds) const;
  /// The same, for the report's JSON "host".
  HostSummary host_summary(double samples, double gpu_seconds) const;
};

/// The loader of a scenario whose node runs `processes_per_node` training processes.
LoaderSpec parse_loader(const Scenario& scenario, const Model& model, const Topology& topology, int processes_per_node,
                        const HostExtras& extras = {});

/// What the host runs beside the loaders of one process per GPU of `ranks`: NCCL's proxy threads
/// when they span nodes, the processes per socket, and `gpu_samples_per_s` (one process's GPU
/// consumption, 0 unknown).
HostExtras host_extras(const Topology& topology, const std::vector<int>& ranks, double gpu_samples_per_s);

/// Whether `ranks` span more than one node (NCCL's proxy threads then drive the network).
bool spans_nodes(const Topology& topology, const std::vector<int>& ranks);

/// The most training processes (one per GPU of `ranks`) that share one node.
int processes_per_node(const Topology& topology, const std::vector<int>& ranks);

/// The most training processes whose GPUs are nearest one CPU socket (host_cpu_of); 0 when the
/// topology has no CPU device.
int processes_per_socket(const Topology& topology, const std::vector<int>& ranks);

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
