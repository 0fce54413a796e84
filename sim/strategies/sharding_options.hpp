// The options of sharded data parallelism, read from the scenario's strategy section, with their
// defaults from the frameworks' own code:
//
// strategy.kind "fsdp" (PyTorch FSDP: torch/distributed/fsdp/api.py for version 1,
// torch/distributed/fsdp/_fully_shard/_fully_shard.py for version 2):
//   sharding             full_shard (default) | shard_grad_op | hybrid_shard | no_shard  (ShardingStrategy)
//   version              2 (fully_shard, the default) | 1 (FullyShardedDataParallel's flat parameters)
//   reshard_after_forward true for full_shard and hybrid_shard, false for shard_grad_op; version 2 also
//                        takes a number of ranks (re-shard to that smaller world: backward AllGathers
//                        span that many ranks)
//   backward_prefetch    backward_pre (default) | backward_post | none            (version 1 only)
//   forward_prefetch     false (default)                                           (version 1 only)
//   limit_all_gathers    true (default): at most two units' gathered parameters    (version 1 only)
//   mixed_precision      {"param_dtype", "reduce_dtype"}: fp32 | bf16 | fp16; param_dtype defaults to
//                        training.precision's half type (fp32 otherwise), reduce_dtype to param_dtype
//                        (MixedPrecision / MixedPrecisionPolicy: reduce_dtype None reduces in param_dtype).
//                        param_dtype "fp8" (version 2): torchao's float8 training with
//                        enable_fsdp_float8_all_gather, as torchtitan's --float8.enable_fsdp_float8_all_gather
//                        runs it: the transformer blocks' linear weights are cast to float8 before the
//                        AllGather (torchao/float8/fsdp_utils.py, fsdp_pre_all_gather: one byte per element),
//                        every other parameter (norms, embeddings, the output layer, which torchtitan's
//                        float8 converter leaves out) is gathered in bf16; reduce_dtype then defaults to
//                        bf16 (the policy's param_dtype)
//   no_sync              false (default): with gradient accumulation, reduce-scatter every micro-step;
//                        true: only the last (FSDP1 no_sync(), FSDP2 set_requires_gradient_sync(False))
//   shard_group_size     hybrid_shard: GPUs per shard group (default: one node's data-parallel ranks)
//   tensor_parallel, sequence_parallel   2-D FSDP x TP (torchtitan: TP innermost, inside a node)
//   replicate_embedding  false (default): the token embedding split by vocabulary over the tensor ranks
//                        (torchtitan); true: whole on each (KempnerForge), sharded over the data ranks only
//   loss_parallel        true (default, torchtitan): with tensor_parallel, the loss over each tensor rank's
//                        share of the vocabulary; false: the output layer's logits gathered whole to every
//                        tensor rank first (ColwiseParallel(output_layouts=Replicate()): KempnerForge's TP
//                        plan, torchtitan's --parallelism.disable_loss_parallel), an AllGather per micro-step
//                        and the loss's tensors on all of the vocabulary
//   tensor_parallel_gather  "module" (default: one gather of each block input serves its column-parallel
//                        linears, Megatron-LM's f, torchtitan's PrepareModuleInput) or "linear" (each
//                        ColwiseParallel(input_layouts=Shard(1)) gathers its own input: q, k, v and the MLP's
//                        gate and up each AllGather the same activation in forward and reduce its gradient
//                        in backward; KempnerForge's TP plan), with tensor_parallel
//   sharded_dtype        fp32 (default) | bf16 | fp16: the dtype of the module's parameters when it is
//                        wrapped, which FSDP keeps for the sharded parameters, their gradients and (through
//                        torch.optim's zeros_like(param)) the optimizer's states. fp32 is torchtitan's; a
//                        model cast to bf16 before fully_shard (KempnerForge: model.to(dtype=param_dtype),
//                        kempnerforge/distributed/parallel.py, "bf16 master weights") holds 2 + 2 + 4 bytes
//                        per parameter with AdamW instead of 4 + 4 + 8. Only the precision's half type, with
//                        training.precision bf16 or fp16
//   cpu_offload          false (default) | true | {"pin_memory": true, "omp_num_threads": 1}: FSDP1's
//                        CPUOffload(offload_params=True), FSDP2's CPUOffloadPolicy (fsdp_cpu_offload.hpp):
//                        the sharded parameters, their gradients and the optimizer's states on the host,
//                        the optimizer step on its cores. pin_memory (version 2 only; FSDP1 always pins):
//                        CPUOffloadPolicy's default true. omp_num_threads is dtsim's: the intra-op threads
//                        of each process's CPU step (torchrun sets OMP_NUM_THREADS=1 for more than one
//                        process per node, torch/distributed/run.py). Only over a shard group of more
//                        than one rank
//
// strategy.kind "zero" (DeepSpeed, deepspeed/runtime/zero/config.py):
//   stage                      1 | 2 | 3 (required)
//   reduce_bucket_size         5e8 elements
//   allgather_bucket_size      5e8 elements: accepted, but changes nothing: stages 1-2 gather the updated
//                              parameters in one all_gather_into_tensor per parameter group
//                              (runtime/utils.py all_gather_dp_groups); the size only cuts the pieces
//                              of its fallback for torch without all_gather_into_tensor / _all_gather_base
//   stage3_prefetch_bucket_size  5e7 elements: the most new elements each fetch prefetches (0: none)
//   stage3_max_live_parameters 1e9 elements: no prefetch while that many are gathered or in flight
//   mics_shard_size            -1 (off): MiCS (mics.py), stage 3 only: parameters, gradients and
//                              optimizer states sharded over groups of that many consecutive ranks,
//                              replicated across the groups; each bucket's gradient shard AllReduced
//                              across the replicas at the accumulation boundary (all_reduce_coalesced)
//   zero_hpz_partition_size    1 (off): ZeRO++'s hierarchical partitioning, stage 3 only: after its
//                              first use since the optimizer step, each partitioned parameter keeps a
//                              secondary copy sharded over groups of that many consecutive ranks
//                              (partition_parameters.py _partition_param_sec), which every later gather
//                              uses (the backward's, the next micro-steps' forward)
//   zero_quantized_weights     false: ZeRO++'s qwZ, stage 3 only: every parameter gather carries int8
//                              values and fp32 scales (CUDAQuantizer), dequantized before the module runs
//   zero_quantized_gradients   false: ZeRO++'s qgZ, stage 3 only, on more than one node: each weight
//                              matrix's gradient quantized to int4 and reduced by an all-to-all inside
//                              the node, then another across the nodes (coalesced_collectives.py
//                              all_to_all_quant_reduce); 1-D gradients keep their ReduceScatter
//   stage3_param_persistence_threshold 1e5 elements: parameter tensors of at most that many stay
//                              whole on every GPU besides their partition, never released by the
//                              coordinator, gathered again after each step (parameter_offload.py
//                              mark_persistent_parameters; stage3.py _post_step)
//   stage3_max_reuse_distance  1e9 elements: a module used again before that many elements of other
//                              modules' parameters have been used stays gathered (no second fetch)
//   overlap_comm               true for stage 3, false otherwise (ZeroConfig's per-stage default);
//                              false at stage 3: the ReduceScatters (synchronous) and each gather's
//                              copy-in run on the compute stream (stage3.py reduce_and_partition_stream,
//                              parameter_offload.py __allgather_stream: default_stream())
//   reduce_scatter             true: stages 1-2 reduce each bucket towards the partitions' owners
//                              (stage_1_and_2.py average_tensor); false: one AllReduce of the bucket
//                              (gradient_reduction_w_predivide). Stage 3 always reduce-scatters (stage3.py)
//   use_multi_rank_bucket_allreduce  true: with reduce_scatter, the owners' slices of a bucket are
//                              reduced together by one AllReduce (allreduce_and_scatter); false: one
//                              Reduce per owner of its slice, rooted at the owner (allreduce_no_retain
//                              with rank=dst: dist.reduce), each rank sending a slice once instead of
//                              an AllReduce's 2(N-1)/N of the bucket
#pragma once

#include "sim/strategies/shard_units.hpp"

#include "sim/scenario/scenario.hpp"
#include "sim/util/json_reader.hpp"

namespace dtsim {

enum class Sharding { FullShard, ShardGradOp, HybridShard, NoShard };
enum class BackwardPrefetch { Pre, Post, None };

const char* to_string(Sharding s);
const char* to_string(BackwardPrefetch p);

/// Bytes of one element of a dtype spelled fp32 / bf16 / fp16 / fp8.
double dtype_bytes(const std::string& dtype);

struct FsdpOptions {
  Sharding sharding = Sharding::FullShard;
  int version = 2;
  bool reshard_after_forward = true;
  int reshard_ranks = 0;                ///< version 2, an int reshard_after_forward: the backward AllGather's world (0: the shard group)
  BackwardPrefetch backward_prefetch = BackwardPrefetch::Pre;
  bool forward_prefetch = false;
  bool limit_all_gathers = true;
  std::string param_dtype = "fp32";
  std::string reduce_dtype = "fp32";
  bool no_sync = false;
  int shard_group = 0;                  ///< GPUs (data ranks) per shard group
  bool sequence_parallel = false;
  /// The token embedding whole on every tensor rank (KempnerForge's TP plan leaves it out of
  /// parallelize_module), not split by vocabulary (torchtitan's RowwiseParallel): FSDP shards it
  /// over the data ranks only, so the root unit's gathers, reductions and states hold all of it.
  bool replicate_embedding = false;
  bool loss_parallel = true;
  bool gather_per_linear = false;  ///< tensor_parallel_gather "linear"
  /// The sharded parameters', their gradients' and the optimizer states' dtype (the module's own).
  std::string sharded_dtype = "fp32";
  /// cpu_offload (fsdp_cpu_offload.hpp): shards, gradients and optimizer states on the host.
  bool cpu_offload = false;
  bool cpu_offload_pinned = true;  ///< pin_memory: the host shards and gradients in page-locked memory
  int cpu_offload_threads = 1;     ///< intra-op threads of each process's CPU step
  double half_efficiency_samples = 0;
};

/// The dtype of a gathered parameter outside the float8 linears, and of the unsharded gradients:
/// param_dtype, or bf16 when it is "fp8".
std::string unsharded_dtype(const FsdpOptions& opt);

/// Whether FSDP keeps its unsharded buffers: the gathered parameters apart from the shards, the
/// unsharded gradients reduced into shards. With a shard group of one rank FSDP1 switches to NO_SHARD
/// (torch/distributed/fsdp/_init_utils.py warns "FSDP is switching to use NO_SHARD instead of ...
/// since the world size is 1") and runs as a replica; FSDP2's fully_shard has no such switch: it
/// gathers into its own buffers and copies the gradients through the reduce dtype's buffers
/// (_fsdp_collectives.py foreach_reduce: "For single GPU, just copy the input to output").
/// KempnerForge's TP-only runs are FSDP2 over such a one-rank dp_shard mesh.
bool keeps_unsharded_buffers(const FsdpOptions& opt);

/// Whether FSDP1 keeps its units gathered from one micro-step to the next over `micro_steps` no_sync
/// micro-steps: without reshard after forward (shard_grad_op, hybrid_shard's _HYBRID_SHARD_ZERO2) its
/// post-backward frees a unit only when gradients sync (torch/distributed/fsdp/_runtime_utils.py
/// _should_free_in_backward: `state._sync_gradients or handle._sharding_strategy in
/// RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES`), so they stay gathered through every micro-step but the
/// last, which frees each in its post-backward. FSDP2 frees them in every backward
/// (reshard_after_backward, default True).
bool keeps_gathered_across_micro_steps(const FsdpOptions& opt, int micro_steps);

/// Bytes of one unit's parameters gathered (the whole unit, every tensor rank's share together).
double gathered_bytes(const ShardUnit& unit, const FsdpOptions& opt);

/// Reads strategy kind "fsdp" for `data` data-parallel ranks of `tensor` GPUs each on nodes of
/// `gpus_per_node` GPUs. Errors (exit 2) name the member's JSON pointer.
FsdpOptions parse_fsdp_options(const Scenario& scenario, int data, int tensor, int gpus_per_node);

struct ZeroOptions {
  int stage = 1;
  double reduce_bucket_elems = 5e8;
  double allgather_bucket_elems = 5e8;
  double prefetch_bucket_elems = 5e7;
  double persistence_threshold = 1e5;
  double max_reuse_distance = 1e9;
  double max_live_parameters = 1e9;
  int mics_shard_size = 0;       // 0: every data-parallel rank shares one partition (MiCS off)
  int hpz_partition_size = 1;    // 1: no secondary partition (ZeRO++ hpZ off)
  bool quantized_weights = false;  // ZeRO++ qwZ: int8 parameter gathers
  bool quantized_gradients = false;  // ZeRO++ qgZ: int4 all-to-all gradient reduction across nodes
  /// ZeRO-Offload (offload_optimizer device "cpu", zero_offload.hpp): fp32 master weights, optimizer
  /// states and fp32 gradients on the host, the step on its cores.
  bool offload_optimizer = false;
  /// pin_memory of offload_optimizer (its host buffers: gradients, the step's copy of the weights)
  /// and of offload_param (the partitioned parameters): offload_config.py's default is true since
  /// DeepSpeed 0.19.5 (PR #8207; false before). False: pageable buffers (ShardedRun::host_copy).
  bool offload_optimizer_pinned = true;
  bool offload_param_pinned = true;
  int offload_threads = 0;          // OpenMP threads of each process's CPU step (0: every hardware thread)
  /// offload_param device "cpu" (stage 3): the partitioned parameters live on the host, copied to
  /// the GPU before each gather (partition_parameters.py: ds_tensor.to(device) on the gather's stream).
  bool offload_param = false;
  bool overlap_comm = false;
  bool reduce_scatter = true;
  bool multi_rank_bucket_allreduce = true;
  double half_efficiency_samples = 0;
};

/// Reads strategy kind "zero". Errors (exit 2) name the member's JSON pointer.
ZeroOptions parse_zero_options(const Scenario& scenario);

}  // namespace dtsim
