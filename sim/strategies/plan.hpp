// What a strategy hands to the engine and the report: the task graph of a few training iterations
// plus what is needed to read the simulated spans back (iteration boundaries, compute per GPU,
// per-GPU memory).
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/strategies/host_model.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtsim {

/// One kind of collective in an iteration, as the framework calls it. Every figure is for one
/// communicator (one group of GPUs running it): `bytes` is the size of the tensors it is called on
/// (for scatter / gather the whole tensor, for send_recv the message), summed over its `calls` in
/// one iteration; `groups` communicators run the same side by side (replicas, tensor ranks).
struct CommGroup {
  std::string label;   ///< "bucket 0", "replicate", ...
  std::string op;      ///< "all_reduce", "broadcast", ...
  double bytes = 0;    ///< per communicator and iteration, summed over `calls`
  int calls = 1;       ///< calls per iteration on one communicator
  int groups = 1;      ///< communicators running it side by side
};

/// What one GPU holds at its peak of allocated memory in an iteration (bytes; memory_timeline.hpp).
struct GpuMemory {
  int device = -1;
  double params = 0;        ///< weights (fp32 master copies for pure half precision, AMP's cached half copies)
  double grads = 0;         ///< gradients produced so far (and DDP's bucket copies)
  double optimizer = 0;     ///< optimizer state (momentum, Adam moments) and its step's temporaries
  double activations = 0;   ///< what autograd keeps for backward, every micro-batch in flight, and the gradients in flight
  double io = 0;            ///< input batch, gathered outputs (DP's GPU0)
  double workspace = 0;     ///< cuBLAS workspaces, gathered parameters (sharded data parallel)
  /// The sum of the above = the peak of allocated bytes (torch.cuda.max_memory_allocated).
  double total() const { return params + grads + optimizer + activations + io + workspace; }
  double peak_reserved = 0;  ///< the caching allocator's segments at that peak (torch.cuda.max_memory_reserved)
  double device_used = 0;    ///< as nvidia-smi shows the process: reserved + CUDA context and loaded kernels
  std::string peak_at;       ///< when the peak happens: "backward of layer4.2.conv1", "the optimizer step", ...
  std::string dominant;      ///< the largest term at the peak: "activations", "optimizer state", ...
  double activations_per_sample = 0;  ///< activations at the peak per sample of a micro-batch (they scale with it)
  /// Of activations: what the micro-batches in flight keep between their forward and backward (the
  /// rest is the working set of the forward or backward running at the peak); 0 at the optimizer step.
  double activations_held = 0;
};

/// One moment of an iteration on one GPU, as memory_timeline.hpp walks it (bytes allocated, by kind).
struct MemoryPoint {
  std::string at;           ///< "forward of layer1.0.conv1", "the optimizer step", ...
  double weights = 0, grads = 0, optimizer = 0, activations = 0;
  double other = 0;         ///< input/output and workspaces
};

/// Bytes a representative of a folded plan receives in a communication (Plan::folded_received).
struct FoldedReceive {
  int device = -1;
  double bytes = 0;
};

struct Plan {
  TaskGraph graph;
  std::vector<int> ranks;               ///< device indices of the GPUs used
  std::vector<int> iteration_end;       ///< per simulated iteration: the task that closes it
  int setup_end = -1;                   ///< task closing the one-off set-up (e.g. parameter broadcast)
  int warmup_iterations = 1;            ///< iterations not used for the steady-state figure
  double compute_per_iteration_s = 0;   ///< busiest GPU's compute time in one iteration
  double single_gpu_iteration_s = 0;    ///< one GPU alone doing training.batch_per_gpu samples (a micro-batch; a pipeline's whole batch)
  double samples_per_iteration = 0;     ///< global batch
  double input_seconds_per_iteration = 0;  ///< one process's DataLoader time for its batch(es) of one iteration
  bool input_in_main_process = false;   ///< no workers: the main process loads between its steps, nothing hides it
  double nccl_slowdown_per_iteration_s = 0;  ///< compute time added by NCCL kernels running beside it (interference.hpp)
  std::vector<CommGroup> comm_per_iteration;  ///< the collectives of one steady-state iteration
  HostSummary host;                     ///< the host's cores under the loader (host_model.hpp)
  std::vector<std::string> notes;       ///< modelling assumptions to show in the report
  std::vector<GpuMemory> memory;        ///< per GPU of `ranks` (same order); empty when not estimated
  std::vector<MemoryPoint> memory_curve;  ///< one iteration of the GPU with the highest peak (the HTML report draws it)
  int memory_curve_device = -1;
  double gpu_memory_bytes = 0;          ///< capacity of one GPU
  /// Host memory per node that offloaded state takes (ZeRO-Offload, FSDP's CPU offload: every
  /// process's share on the node's busiest host); 0: nothing offloaded. predict holds it against the
  /// topology's host.memory_bytes.
  double host_offload_bytes_per_node = 0;
  int pipeline_stages = 1;              ///< > 1: the report shows the bubble
  std::vector<int> stage_devices;       ///< per pipeline stage, its first GPU (the timeline's rows)
  /// Per pipeline stage, its GPUs: the report's per-stage row reads the one with the most compute (with
  /// step-time jitter the stage runs at its slowest rank's pace; a folded plan's representative is it).
  std::vector<std::vector<int>> stage_gpus;
  int microbatches = 1;
  int virtual_stages = 1;               ///< model chunks per GPU (> 1: interleaved 1F1B)
  /// > 0: a folded plan (folded_comms.hpp): `ranks` are representatives of this many GPUs, each
  /// standing for the ranks that run the same schedule; per-GPU figures are theirs.
  int folded_from_gpus = 0;
  /// Folded: per GPU of `ranks` and iteration, the step-time jitter factor its compute ran at (that
  /// of the slowest rank it stands for; their mean is 1), so that the report can tell the
  /// stragglers' wait from communication.
  std::vector<std::vector<double>> folded_jitter;
  /// Folded: per delay standing for a communication (its `bytes` are what its own rank sends), the
  /// representative that receives in it (its own rank, or a point-to-point send's destination) and
  /// how many bytes, where any.
  std::unordered_map<int, FoldedReceive> folded_received;
};

}  // namespace dtsim
