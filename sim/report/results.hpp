// Reads the simulated spans back into the figures a user asks for: iteration time and its parts,
// throughput, speedup, scaling efficiency, epoch and total time, beside the by-hand arithmetic
// (single-GPU total, ideal linear total).
#pragma once

#include "sim/plan/task_graph.hpp"
#include "sim/report/gpu_usage.hpp"
#include "sim/report/stage_usage.hpp"
#include "sim/report/comm_overlap.hpp"
#include "sim/report/critical_path.hpp"
#include "sim/strategies/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

/// A change that would make a scenario whose GPUs do not fit fit, planned (fit_alternatives.hpp).
struct FitAlternative {
  std::vector<std::string> sets;  ///< the --set arguments that make it: "training.activation_checkpointing=full"
  double device_bytes = 0;        ///< the busiest GPU's device memory with them
  bool fits = false;              ///< every GPU (and the host's offloaded share) fits with them
  bool host_fits = true;          ///< the host holds the state offloaded to it
};

struct RunResult {
  // What was simulated.
  std::string scenario;
  std::string strategy;
  std::string model;
  std::string topology;
  std::string gpu;
  int gpus = 0;
  int nodes_used = 0;
  int gpus_per_node = 0;
  long long params = 0;
  double gradient_bytes = 0;
  std::vector<CommGroup> comm_per_iteration;
  std::vector<std::string> notes;
  std::string compute_source;

  // One steady-state iteration.
  int simulated_iterations = 0;
  int warmup_iterations = 0;
  double iteration_time_s = 0;
  double iteration_spread = 0;   ///< (max - min) / mean over the measured iterations
  double compute_time_s = 0;
  double nccl_slowdown_s = 0;    ///< part of compute: kernels slowed by NCCL kernels beside them
  double comm_time_s = 0;        ///< time with at least one of the first GPU's collectives or transfers under way (device_communication.hpp)
  double straggler_wait_s = 0;   ///< slowest GPU's compute minus the mean (jitter, imbalance)
  double exposed_comm_time_s = 0; ///< iteration - compute - straggler wait - input wait - host step - pipeline bubble
  double pipeline_bubble_s = 0;   ///< pipelines only: the waiting every stage has, fill and drain (account_pipeline_bubble)
  /// The optimizer step on the host's cores (ZeRO-Offload, FSDP's CPU offload): the first GPU's host
  /// work per iteration, idle time that is neither communication nor input (0: none).
  double host_step_s = 0;
  double input_time_s = 0;       ///< one process's DataLoader time per iteration (0: none)
  double input_wait_s = 0;       ///< GPUs idle because the DataLoader is slower than they are
  bool input_bound = false;      ///< the DataLoader sets the pace
  HostSummary host;              ///< the host's cores under the loader (JSON "host")
  std::vector<CriticalPart> critical_path;  ///< what set the iteration's length, by kind of step
  /// Sharded data parallelism (fsdp, zero): per kind of collective on the first GPU, its time in
  /// flight and the part compute did not hide (comm_overlap.hpp); empty for other strategies.
  std::vector<CommOverlap> comm_overlap;
  double setup_time_s = 0;       ///< one-off (parameter broadcast)

  // Scaling and totals.
  double samples_per_iteration = 0;
  double throughput_samples_per_s = 0;
  double single_gpu_iteration_s = 0;
  double single_gpu_throughput = 0;
  double speedup_vs_1gpu = 0;
  double scaling_efficiency = 0;
  double dataset_samples = 0;
  double epochs = 0;
  double batch_per_gpu = 0;
  double micro_batch = 0;          ///< samples per data-parallel rank and micro-step (BatchSpec)
  std::int64_t global_batch = 0;   ///< samples per optimizer step, whole job
  int gradient_accumulation = 1;   ///< micro-steps per optimizer step (a pipeline's micro-batches)
  int data_parallel = 1;           ///< data-parallel replicas
  /// training.activation_checkpointing as the scenario spells it (none, selective, selective_op, full,
  /// selective_layer) and the n of selective_layer (1 otherwise)
  std::string activation_checkpointing = "none";
  int activation_checkpointing_every = 1;
  double iterations_per_epoch = 0;
  double single_gpu_iterations_per_epoch = 0;
  double epoch_time_s = 0;
  double total_time_s = 0;
  double total_time_days = 0;
  double single_gpu_total_days = 0;
  double ideal_linear_total_days = 0;

  // Per GPU (filled by predict(); see gpu_usage.hpp).
  std::vector<GpuUsage> per_gpu;
  std::vector<GpuMemoryRow> memory;
  double gpu_memory_bytes = 0;
  bool memory_fits = true;
  int pipeline_stages = 1;
  std::vector<StageUsage> stages;  ///< per pipeline stage (stage_usage.hpp); empty without one
  int microbatches = 1;
  int virtual_stages = 1;
  double bubble_fraction = 0;   ///< pipelines only: pipeline_bubble_s's share of one iteration (account_pipeline_bubble)
  /// The whole model at batch_per_gpu on one GPU (weights, gradients, optimizer state, activations;
  /// memory.hpp): when it exceeds one GPU, the single-GPU figures are arithmetic only.
  double single_gpu_memory_bytes = 0;
  /// training.activation_checkpointing: what the fits verdict may still suggest.
  bool full_recomputation = false;
  /// Offloaded state per node on the host (ZeRO-Offload, FSDP's CPU offload; 0: none) and the node's
  /// DRAM (0: not given); host_memory_fits: it holds that state (part of memory_fits).
  double host_offload_bytes = 0;
  double host_memory_bytes = 0;
  bool host_memory_fits = true;
  bool single_gpu_fits = true;
  /// When a GPU does not fit: changes planned to see whether they would (filled by `dtsim run`, not
  /// by predict(), which sweep and compare call for every point); empty: none were planned.
  std::vector<FitAlternative> fit_alternatives;

  /// The same scenario with its reference_compute (a sourced single-GPU throughput) in place of
  /// its own compute, shown beside it; single_gpu_throughput 0 when the scenario has none.
  struct Reference {
    double single_gpu_throughput = 0;  ///< samples/s, from the source
    std::string source;
    double throughput = 0;             ///< predicted, all GPUs
    double iteration_time_s = 0;
    double scaling_efficiency = 0;
    double total_days = 0;
    double single_gpu_total_days = 0;
  } reference;
};

/// `result` arrives with the descriptive fields and training sizes filled; this fills the rest.
void analyse(const Plan& plan, const std::vector<Span>& spans, RunResult& result);

/// Pipelines, once `result.stages` is filled: the time analyse() left beyond compute, input and the host
/// step (its straggler wait and exposed communication) is split by the stage table (stage_usage.hpp):
/// `pipeline_bubble_s` the waiting every stage has (fill and drain: the least of the stages' waiting),
/// exposed communication the stages' mean communication outside compute (TP, PP and DP columns), the
/// straggler wait the rest (the other stages waiting for the slowest stage's compute); `bubble_fraction`
/// the bubble's share of the iteration. Until session 40 the bubble read as communication nothing hid;
/// in session 40 the bubble was all waiting beyond analyse()'s straggler wait, none where the stages'
/// communication exceeded that (interleaved schedules).
void account_pipeline_bubble(RunResult& result);

}  // namespace dtsim
