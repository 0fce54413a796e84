// A scenario: which cluster, which model, how it is trained, with which parallelism strategy.
// The parsed fields that every strategy needs are typed here, parsed once (training_settings.hpp:
// the training section, the batch and the strategy's parallel degrees); a strategy's own options
// (bucket sizes, schedules, layouts) stay JSON and are read, with their pointers, by its builder.
#pragma once

#include "sim/model/transformer_family.hpp"
#include "sim/topology/gpu_spec.hpp"
#include "sim/util/input_error.hpp"
#include "sim/util/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// One layer of a measured per-layer profile (seconds at the profile's batch).
struct ProfiledLayer {
  std::string name;
  double fwd_s = 0, bwd_s = 0;
};

/// A measured per-layer profile: a calibration file's "compute" section or profile_model.py output.
struct ComputeProfileSource {
  std::string file;            ///< resolved path
  std::string model;           ///< model the layers belong to
  std::int64_t batch = 0;      ///< per-GPU batch of the timings
  double optimizer_s = 0;      ///< optimizer step per iteration (0 = not measured)
  std::vector<ProfiledLayer> layers;
};

/// Reads {"profile": FILE} (path relative to the scenario file); InputError naming file + pointer.
ComputeProfileSource read_compute_profile_source(const JsonReader& profile_value);

/// Where per-layer compute times come from (exactly one per scenario).
struct ComputeSpec {
  enum class Source { StepTime, Throughput, Flops, Profile };
  Source source = Source::StepTime;
  double step_time_s = 0;            ///< measured single-GPU time of one iteration at batch_per_gpu
  double single_gpu_throughput = 0;  ///< measured samples/s of one GPU at batch_per_gpu
  /// StepTime/Throughput: the share of the measured step that is compute; predict() takes off the
  /// input copy that dtsim simulates on its own (the measurement included it).
  double compute_share_of_step = 1.0;
  std::string gpu;                   ///< Flops: GPU kind whose peak is used ("" = the cluster's)
  double efficiency = 0;             ///< Flops: fraction of peak reached (Roofline: by compute-bound kernels)
  /// Flops: how a layer's time follows from its work (training.compute.model):
  ///   Flops     "flops": its FLOPs / (peak x efficiency), backward 2 x forward (the default);
  ///   Roofline  "roofline": each of its kernels takes the longer of FLOPs / (peak x efficiency) and
  ///             bytes moved / (HBM bandwidth x memory_efficiency) (sim/strategies/roofline.hpp).
  enum class Model { Flops, Roofline };
  Model model = Model::Flops;
  /// Roofline: fraction of the GPU's datasheet HBM bandwidth a memory-bound kernel reaches
  /// (training.compute.memory_efficiency; 0 = roofline.hpp's measured default).
  double memory_efficiency = 0;
  ComputeProfileSource profile;      ///< Profile: measured per-layer times
};

/// strategy.kind.
enum class StrategyKind { Single, Ddp, Dp, Pipeline, Hybrid, Fsdp, Zero };

/// "single", "ddp", "dp", "pipeline", "hybrid", "fsdp", "zero": the spelling scenarios and reports use.
const char* to_string(StrategyKind kind);

/// single, ddp and dp: every GPU holds the whole model (the one-GPU run is their baseline).
inline bool replicates_the_model(StrategyKind kind)
{
  return kind == StrategyKind::Single || kind == StrategyKind::Ddp || kind == StrategyKind::Dp;
}

/// The parallel degrees of strategy.kind, read once: tensor_parallel and pipeline_stages of a hybrid,
/// the stages of a pipeline (one per GPU), and the data-parallel replicas that follow from them.
struct StrategySpec {
  StrategyKind kind = StrategyKind::Ddp;
  int tensor = 1;    ///< GPUs per tensor-parallel group (hybrid, fsdp)
  int stages = 1;    ///< pipeline stages of one replica
  int data = 1;      ///< data-parallel replicas (DataParallel: the GPUs its one process splits the batch over)
};

/// The batch in Megatron's and PyTorch's vocabulary, resolved for the strategy:
///   micro_batch   samples one data-parallel rank (a model replica) runs per forward and backward;
///   accumulation  micro-steps per optimizer step (DDP's gradient accumulation, a pipeline's micro-batches);
///   global_batch  samples per optimizer step of the whole job = micro_batch x accumulation x data.
/// Given as training.micro_batch (+ training.global_batch), or by the older training.batch_per_gpu
/// (+ strategy.gradient_accumulation or strategy.microbatches), whose meaning is kept: per GPU and
/// micro-step for single/ddp/dp, one replica's batch of all its micro-batches for pipeline/hybrid.
struct BatchSpec {
  /// A whole number when given; batch_per_gpu / microbatches may leave a fraction (an older pipeline
  /// scenario whose micro-batches do not divide its batch).
  double micro_batch = 0;
  std::int64_t global_batch = 0;
  int accumulation = 1;
  bool given_as_micro = false;     ///< training.micro_batch was given (not batch_per_gpu)
  /// The batch a measured training.compute (step_time_s, single_gpu_throughput) was taken at:
  /// batch_per_gpu, or micro_batch when the batch is given in micro-batches.
  std::int64_t measured_at = 0;
};

/// training.activation_checkpointing: what backward recomputes (Korthikanti et al. 2022, section 5).
/// none; selective: Megatron's (the attention core recomputed; Korthikanti et al. 2022); full: every
/// transformer layer recomputed; selective_op: torchtitan's op-level selective checkpointing (per
/// transformer layer, the outputs of matmuls and of the SDPA kernel are saved, all but every second
/// matmul's, and everything else is recomputed: torchtitan/models/llama3/infra/parallelize.py,
/// _save_list and "Saves output of all compute ops, except every second mm"); selective_layer:
/// torchtitan's layer-level selective checkpointing (selective_ac_option an integer n) and IBM
/// fms-fsdp's selective_checkpointing 1/n: every n-th transformer layer recomputed whole (Full with
/// Recomputation::every n), the others keep all they save.
enum class ActivationCheckpointing { None, Selective, Full, SelectiveOp };

/// Whether transformer layer `block` (0-based, model order, transformer_layers) is recomputed whole
/// when every `every`-th is: torchtitan's counter (parallelize.py _apply_ac_to_transformer_block:
/// `_layer_sac_count += 1; if not ac_freq or _layer_sac_count % ac_freq == 0: checkpoint`), so with
/// every 2 the 2nd, 4th, ... layers; every 1 is full recomputation. Counted over the whole model, as a
/// process holding all of it counts (FSDP, ZeRO, DDP); torchtitan's counter is per process, so with
/// pipeline stages it restarts on each stage, which dtsim's does not.
inline bool recomputes_block(std::size_t block, int every)
{
  return every <= 1 || (block + 1) % static_cast<std::size_t>(every) == 0;
}

/// What backward recomputes: training.activation_checkpointing's policy with its n
/// (training.activation_checkpointing_every, read under Full only: every n-th transformer layer,
/// "selective_layer"; 1, every layer, "full"). A policy alone converts to it with every 1.
struct Recomputation {
  ActivationCheckpointing policy = ActivationCheckpointing::None;
  int every = 1;

  Recomputation(ActivationCheckpointing p = ActivationCheckpointing::None, int n = 1) : policy(p), every(n) {}

  /// Whether backward recomputes anything.
  bool any() const { return policy != ActivationCheckpointing::None; }
  /// Every transformer layer recomputed whole ("full").
  bool every_layer() const { return policy == ActivationCheckpointing::Full && every <= 1; }
  /// Whether transformer layer `block` is recomputed whole (Full, and one of its every-th).
  bool recomputes_whole(std::size_t block) const
  {
    return policy == ActivationCheckpointing::Full && recomputes_block(block, every);
  }
  /// training.activation_checkpointing as a scenario spells it: selective_layer for full recomputation
  /// of every n-th layer (n > 1), else the policy's own name.
  const char* name() const
  {
    switch (policy) {
      case ActivationCheckpointing::Full:
        return every > 1 ? "selective_layer" : "full";
      case ActivationCheckpointing::Selective:
        return "selective";
      case ActivationCheckpointing::SelectiveOp:
        return "selective_op";
      default:
        return "none";
    }
  }
};

/// training.attention: how attention runs. sdpa (default): PyTorch's scaled_dot_product_attention
/// (flash or memory-efficient kernel: no score matrix kept); eager: the softmax(QK^T)V of Hugging
/// Face's eager_attention_forward (the scores in memory).
enum class AttentionKernel { Sdpa, Eager };

/// training.attention_kernel: which fused kernel runs sdpa attention, by the tensor-core instructions
/// it is built from (sim/strategies/attention_rate.hpp): flash2 (FlashAttention 1 or 2, PyTorch SDPA's
/// flash or memory-efficient backend, Triton flash attention without Hopper support: mma.sync, at 2/3
/// of the GEMMs' rate on Hopper), flash3 or cudnn (FlashAttention-3, cuDNN's fused attention: wgmma,
/// at the GEMMs' rate). auto (the default): the GEMMs' rate, as PyTorch SDPA's cuDNN backend runs on
/// Hopper where PyTorch prefers it (sm_90 with cuDNN 9.15.1 or later, aten sdp_utils.cpp
/// check_prefer_cudnn_attention); older PyTorch picks its FlashAttention-2 backend there: flash2.
enum class FusedAttentionKernel { Auto, Flash2, Flash3, Cudnn };

/// training.loss_kernel: eager (default): F.cross_entropy's log_softmax and nll_loss; fused:
/// flash-attn's CrossEntropyLoss, the loss and its gradient in one kernel.
enum class LossKernel { Eager, Fused };

/// training.optimizer's spellings: "sgd" (momentum, the default), "sgd-plain", "adam", "adamw", each
/// also with "-foreach" (the same: PyTorch's default on CUDA), "-fused" or "-for-loop".
std::vector<std::string> optimizer_names();

struct TrainingSpec {
  std::int64_t dataset_samples = 0;
  /// The per-GPU batch the strategies read, as batch_per_gpu means it (see BatchSpec); derived from
  /// micro_batch x accumulation for pipeline/hybrid when the batch is given in micro-batches.
  std::int64_t batch_per_gpu = 0;
  BatchSpec batch;
  double epochs = 0;
  Precision precision = Precision::Fp32;
  /// training.activation_checkpointing and its n: "selective_layer" is Full with n from
  /// training.activation_checkpointing_every, default 2 as torchtitan's selective_ac_option "2".
  Recomputation recomputation;
  ComputeSpec compute;
  /// training.host_sync "micro_step": the training loop waits for the GPU after every micro-step's
  /// backward (a `total_loss += loss.item()` in the accumulation loop, as KempnerForge's has), so
  /// nothing of the next micro-step is issued before it ends; "step" (the default): only once per
  /// optimizer step (the gradient norm, the loss for the log).
  bool host_sync_each_micro_step = false;
  std::string optimizer = "sgd";  ///< training.optimizer, one of optimizer_names()
  AttentionKernel attention = AttentionKernel::Sdpa;
  FusedAttentionKernel attention_kernel = FusedAttentionKernel::Auto;
  /// training.loss_dtype: bytes per logit of the cross entropy's own tensors, 4 for fp32 (the default,
  /// logits.float()), 2 for bf16 or fp16 (F.cross_entropy on a half-precision model's output as it is).
  double loss_bytes = 4;
  LossKernel loss_kernel = LossKernel::Eager;
  /// training.norm_kernel: how an RMSNorm runs: eager (default; one ATen kernel per operation, as
  /// torchtitan's "rmsnorm", fms's LayerNormParameterized and Hugging Face's LlamaRMSNorm write it)
  /// or fused (one kernel: torchtitan's "fused_rmsnorm" Triton kernel, Apex's, Transformer Engine's).
  /// Timed by the roofline compute model only (roofline.hpp); LayerNorm is one kernel either way.
  bool fused_rmsnorm = false;
  /// training.hold_logits: the training loop keeps the model's output (the logits the loss reads) in
  /// a variable until the next forward's output replaces it, through backward, the optimizer step and
  /// the next forward (KempnerForge's scripts/train.py: `logits = model(input_ids)`, never deleted).
  /// false (the default): the loop lets it go before backward (torchtitan's train.py `del pred`,
  /// "need to free it before bwd to avoid peaking memory"; Hugging Face's compute_loss returns the
  /// loss alone; Megatron-LM's forward_step returns the loss).
  bool hold_logits = false;
  /// training.compile: the model runs under torch.compile, whose Inductor fuses its elementwise
  /// operations (RMSNorm, rotary embeddings, activations, residual adds) into generated kernels. The
  /// roofline compute model times them as fused kernels (roofline.hpp); the "flops" model's
  /// efficiency, measured on a run, already holds whatever compile did. Memory is not changed.
  bool compile = false;
};

/// One --set override: "training.compute.single_gpu_throughput=367".
struct Override {
  std::string path;   ///< dotted path
  std::string value;  ///< JSON text, or a bare string
  std::string origin = "--set";  ///< the option it came from, blamed for a path the scenario has no place for
};

struct Scenario {
  std::string file;            ///< the scenario file (errors name it)
  nlohmann::json doc;          ///< the document after --set overrides
  nlohmann::json file_doc;     ///< the document as the file has it (to tell the overrides' members apart)
  std::vector<Override> overrides;
  std::string name;
  std::string model;           ///< the model's name or .json path; for an inline model, its name (for text)
  /// The inline model ("model": {"family": ..., "hidden": ...}); absent when `model` names one.
  /// scenario_model() (scenario_model.hpp) turns either into the layer table.
  std::optional<TransformerSpec> model_spec;
  TrainingSpec training;
  std::string strategy;        ///< strategy.kind, as spelled (to_string(strategy_spec.kind))
  StrategySpec strategy_spec;
  int gpus = 0;
  /// Optional "reference_compute": a sourced single-GPU throughput to show beside the scenario's
  /// own compute (e.g. a realistic figure beside the seed's arithmetic); 0 when absent.
  double reference_throughput = 0;
  std::string reference_source;

  JsonReader reader() const { return JsonReader(doc, file); }
  JsonReader cluster() const { return reader().at("cluster"); }
  JsonReader strategy_options() const { return reader().at("strategy"); }
};

/// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> split_override_path(const std::string& path);

/// Parses "a.b.c=value"; throws InputError (file "--set") when malformed.
Override parse_override(const std::string& text);

/// Applies overrides to a document. A value that parses as JSON is used as such, otherwise as a
/// string; `null` removes the member. Setting training.micro_batch or global_batch removes
/// batch_per_gpu and the other way round. Setting one way of giving the compute times
/// (training.compute.step_time_s | single_gpu_throughput | gpu+efficiency | profile) removes the others.
void apply_overrides(nlohmann::json& doc, const std::vector<Override>& overrides);

/// Whether an override of path `later`, applied after one of `earlier`, undoes it: the same path or
/// one that holds it ("training.compute" after "training.compute.step_time_s"), or another way of
/// giving the same thing, which apply_overrides removes (training.micro_batch after
/// training.batch_per_gpu, training.compute.step_time_s after training.compute.profile).
bool override_replaces(const std::string& later, const std::string& earlier);

/// Loads, applies overrides, validates. Throws InputError naming the file and JSON pointer; an
/// unknown member that only an override brought in is blamed on the override ("--set a.b: at /a/b").
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});

/// An "unknown member" error in the scenario file at a place that only an override made (a path
/// the file lacks, on or under the override's path) is that override's: the error relabelled
/// "--set a.b" (or "--vary a.b"); any other error unchanged.
InputError blamed_on_overrides(const InputError& error, const Scenario& scenario);

/// Validates an already-built document (used by load_scenario and by tests).
Scenario parse_scenario(nlohmann::json doc, const std::string& file);

}  // namespace dtsim
