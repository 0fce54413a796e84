// Validation of training predictions against measured runs: the training counterpart of
// validating nccl-tests logs. A CSV names, per row, the machine, model, batch, strategy, loader and
// compute calibration of a measured run, and its measured throughput (samples/s) or time (s, for
// the same work as its baseline). Each row is predicted with `predict`; a row with a baseline is
// judged on its ratio to that baseline (a speedup over 1 GPU, a DataParallel / DDP time ratio),
// so that the compute calibration cancels and what is judged is the parallel model.
//
// Columns (header line required, in any order; blank cells take the default):
//   id, baseline       row name; the id of the row it is compared to (blank: a baseline)
//   cluster            topology preset, or a topology .json path relative to the CSV
//   gpu, host_cores    overrides of the cluster's GPU kind and CPU cores per node
//   nodes, gpus, model, precision, batch_per_gpu, strategy (single|ddp|dp|pipeline|hybrid)
//                      (model: a name, a .json file beside the CSV, or an inline transformer as a JSON
//                      object, RFC 4180 quoted: "{""family"": ""llama"", ""hidden"": 5120, ...}")
//   loader_workers     as the run's script states it (blank: not stated, dtsim's assumption)
//   dataset            models/datasets kind (blank: the model's default)
//   compute            throughput=SAMPLES_PER_S (one GPU, measured) | efficiency=F | step_time=S |
//                      efficiency=calibrate: on a row without a baseline, the efficiency at which dtsim
//                      meets the row's measurement (efficiency_calibration.hpp; its rate must be samples/s,
//                      or a time with its global_batch); on a row with one, its baseline's efficiency.
//   measured, unit     the measured figure and its unit: "samples/s" or "s", or "tokens/s" (the whole job's)
//                      or "tokens/s/gpu" (per GPU, as torchtitan's TPS/GPU), turned into samples/s by the
//                      model's seq_len (and the row's gpus); both blank: a run not measured, predicted only
//                      (its samples/s and, with a baseline, its ratio to it; judged on nothing)
//   source             where the measurement was published
// Optional columns for Megatron-LM runs (blank: not given; each as the scenario field it becomes):
//   micro_batch, global_batch   training.micro_batch and global_batch; a row with micro_batch leaves
//                      batch_per_gpu blank (batch_per_gpu is required only without micro_batch, and
//                      the header may then leave it out). A time ("s") with a global_batch is judged as
//                      global_batch / time samples/s, so that rows of different batches compare; its
//                      baseline then gives a global_batch too.
//   activation_checkpointing    training.activation_checkpointing: none | selective | full | selective_op |
//                      selective_layer, or true (full: every block, as Composer and Hugging Face mean it) | false (none)
//   activation_checkpointing_every  training.activation_checkpointing_every (selective_layer's n)
//   optimizer          training.optimizer (blank: SGD with momentum, the scenario default)
//   tensor_parallel, pipeline_stages, sequence_parallel (true|false), distributed_optimizer, virtual_stages
//   (true|false)       strategy hybrid's options; schedule (gpipe | 1f1b) for pipeline and hybrid.
//                      strategy may be single, ddp, dp, pipeline, hybrid, fsdp or zero; fsdp also takes
//                      tensor_parallel and sequence_parallel.
//   strategy_options   further options of the strategy as a JSON object (RFC 4180 quoting: "{""stage"": 3}"),
//                      e.g. fsdp's sharding and mixed_precision, zero's stage; not kind nor a column's own.
//   compute_model      training.compute.model beside compute=efficiency=F: flops | roofline
//   attention          training.attention: sdpa (fused, flash) | eager (the scores in memory)
//   attention_kernel   training.attention_kernel: auto | flash2 | flash3 | cudnn (sdpa's kernel, by its
//                      tensor-core instructions: flash2 runs at 2/3 of the GEMMs' rate on Hopper)
//   loss_dtype         training.loss_dtype: fp32 (logits.float()) | bf16 | fp16 (the loss on the model's output)
//   loss_kernel        training.loss_kernel: eager (F.cross_entropy) | fused (flash-attn's CrossEntropyLoss)
//   ranks              simulation.ranks: auto | all | representatives (fold a run whose ranks are alike
//                      below auto's 64 GPUs; the measurement's own settings are the other columns)
//   host_sync          training.host_sync: step (default) | micro_step (the loop waits for the GPU each micro-step)
//   hold_logits        training.hold_logits: false (default) | true (the loop keeps the logits until the next forward)
//   compile            training.compile: false (default) | true (torch.compile: the roofline fuses elementwise kernels)
//   norm_kernel        training.norm_kernel: eager (default) | fused (one RMSNorm kernel, for the roofline)
// Optional columns of measured memory (GiB = 2^30 bytes, per GPU, the largest over the GPUs):
//   peak_allocated_gib torch.cuda.max_memory_allocated, as the run's logs give it
//   peak_reserved_gib  torch.cuda.max_memory_reserved (torchtitan's "memory" figure)
// Each is compared with dtsim's peak of that kind (training_memory.hpp), not judged on a baseline.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/util/abs_error_summary.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace dtsim {

/// Most rows a runs CSV may have: each row is a simulation; the published runs are a few dozen.
constexpr std::size_t kMaxTrainingRuns = 1000;

/// One row of a runs CSV, checked: its scenario (not yet parsed: parse_scenario names `label`).
struct TrainingRunRow {
  std::string id, baseline, source, summary;
  double measured_rate = 0;  ///< samples/s, or 1/s for a time; 0: not measured (predicted only)
  /// A measurement in tokens: measured_rate holds tokens/s of the whole job until validate divides it
  /// by the model's sequence length (a named model's is known only once it is loaded).
  bool measured_in_tokens = false;
  nlohmann::json scenario;
  std::string label;         ///< "FILE line N", the file parse_scenario errors name
  std::set<std::string> columns;  ///< the columns whose cells this row fills (an error names one of them)
  double allocated_gib = 0;  ///< measured peak allocated memory per GPU (0: not given)
  double reserved_gib = 0;   ///< measured peak reserved memory per GPU (0: not given)
  /// compute=efficiency=calibrate: a row without a baseline runs at the efficiency that meets its own
  /// measurement, one with a baseline at its baseline's efficiency.
  bool calibrate_efficiency = false;
};

/// Parses the CSV text of `csv_path` (RFC 4180 quoting, a header naming known columns, every
/// number checked, a cluster file inside the CSV's folder, a baseline naming an earlier row).
/// Throws InputError naming the file, the line and the column.
std::vector<TrainingRunRow> read_training_runs(const std::string& text, const std::string& csv_path);

/// The row's scenario, parsed; an error in it names the CSV, the line and the column.
Scenario parse_training_run(const TrainingRunRow& row);

struct TrainingRun {
  std::string id, baseline, source;
  double measured_rate = 0;   ///< samples/s, or 1/s for a time; 0: not measured
  double predicted_rate = 0;  ///< samples/s
  double measured_ratio = 0;  ///< rate / baseline's rate (0: a baseline, or either not measured)
  double predicted_ratio = 0;
  double error = 0;           ///< predicted_ratio / measured_ratio - 1
  bool compared = false;      ///< a baseline, and both it and this row measured: error is judged
  bool input_bound = false;
  /// training.compute.efficiency the row ran at (0: its compute is a measured throughput or step
  /// time); calibrated: found by efficiency=calibrate on this row (simulations: the predictions it took).
  double efficiency = 0;
  bool efficiency_calibrated = false;
  int calibration_simulations = 0;
  /// What dtsim's iteration is made of (run's figures, seconds per steady-state iteration): its
  /// length, compute (with the part NCCL's kernels slowed, interference.hpp), communication compute
  /// did not hide, and, for sharded runs (fsdp, zero), the first GPU's collectives in flight summed
  /// over their kinds (comm_overlap.hpp).
  double predicted_iteration_s = 0, predicted_compute_s = 0, predicted_nccl_slowdown_s = 0;
  double predicted_exposed_comm_s = 0, predicted_sharded_comm_in_flight_s = 0;
  double predicted_pipeline_bubble_s = 0;  ///< pipelines: the fill and drain every stage waits for (results.hpp)
  std::string summary;        ///< strategy, GPUs, model, precision
  /// Peak memory per GPU, GiB (largest over the GPUs): measured (0: not given) and predicted.
  double measured_allocated_gib = 0, predicted_allocated_gib = 0;
  double measured_reserved_gib = 0, predicted_reserved_gib = 0;
  /// dtsim's verdict on the run's memory (as `run` gives it: the device's use, reserved + CUDA
  /// context, within one GPU's capacity), its largest device use and that capacity, GiB. Every row
  /// ran (its throughput is measured), so a row that does not fit is a wrong verdict.
  bool predicted_fits = true;
  double predicted_device_gib = 0, capacity_gib = 0;
};

/// Reads and predicts every row. Throws InputError naming the file, row and column for bad input.
std::vector<TrainingRun> validate_training_runs(const std::string& csv_path);
/// The same on the CSV's text, read once (a pipe cannot be read twice); `csv_path` names it in errors.
std::vector<TrainingRun> validate_training_runs(const std::string& text, const std::string& csv_path);

/// Whether `text` starts (after comments) with a runs CSV's header: known columns, "id" and
/// "measured" among them. Tells a runs CSV from a measurement log whatever the file's name.
bool looks_like_training_runs(const std::string& text);

/// Median and worst |error| over the compared rows (TrainingRun::compared).
AbsErrorSummary compared_errors(const std::vector<TrainingRun>& runs);

/// The table: per row measured and predicted ratio and error; median and worst |error|.
std::string format_training_runs(const std::vector<TrainingRun>& runs);

}  // namespace dtsim
