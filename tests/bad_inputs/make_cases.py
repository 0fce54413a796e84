#!/usr/bin/env python3
"""Writes tests/bad_inputs/cases.txt: one bad input per line, as
NAME | FILE named in the message | JSON POINTER named (- when none) | dtsim ARGUMENTS (@OUT@: an output path)
Run from anywhere; the list is committed."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
F = "tests/bad_inputs/files/"
cases = []

def case(name, file, pointer, args):
    cases.append((name, file, pointer, args))

# Scenario values through --set on the seed scenarios: each names the scenario file and the pointer.
DDP = "scenarios/seed-4gpu-ddp.json"
PIPE = "scenarios/seed-2gpu-pipelined.json"
HYB = "scenarios/imagenet-resnet50-32gpu-hybrid.json"
sets = [
    (DDP, "training.batch_per_gpu", ["0", "-1", "1.5", "x", "1e400", "4294967296", "16777217", "true", "[1]", "{}"]),
    (DDP, "training.dataset_samples", ["0", "-5", "1e20", "18446744073709551615", "null"]),
    (DDP, "training.epochs", ["0", "-1", "nan", "1e400", "1e300", "1e-300", "1e-7"]),
    (DDP, "training.compute.single_gpu_throughput", ["0", "-1", "abc", "[1]", "1e19", "1e-300"]),
    (DDP, "training.compute.step_time_s", ["0", "1e308", "1e7", "-0.5", "1e-300"]),
    (DDP, "training.compute.efficiency", ["2", "0", "-0.1"]),
    (DDP, "training.compute.jitter_cv", ["-1", "x"]),
    (DDP, "training.precision", ["fp8", "32"]),
    (DDP, "training.optimizer", ["lamb", "adamw-fast", "1"]),
    (DDP, "training.attention", ["flash3", "1"]),
    (DDP, "training.attention_kernel", ["flash4", "triton", "1"]),
    (DDP, "training.loss_dtype", ["bf16", "fp8", "1"]),
    (DDP, "training.loss_kernel", ["liger", "1"]),
    (DDP, "training.host_sync", ["always", "1"]),
    (DDP, "training.hold_logits", ["yes", "1"]),
    (DDP, "training.compile", ["yes", "1"]),
    (DDP, "training.norm_kernel", ["triton", "1"]),
    (DDP, "training.loader.workers", ["-1", "100000", "1.5", "4294967297"]),
    (DDP, "training.loader.per_sample_ms", ["-1", "\"4\""]),
    (DDP, "training.loader.affinity", ["numa", "1"]),
    (DDP, "training.unknown", ["1"]),
    (DDP, "strategy.kind", ["horovod", "1"]),
    (DDP, "strategy.gradient_accumulation", ["2147483648", "0", "5000", "4294967296"]),
    (DDP, "strategy.bucket_cap_mb", ["0", "-1", "1e400"]),
    (DDP, "strategy.first_bucket_mb", ["0"]),
    (DDP, "strategy.broadcast_buffers", ["1"]),
    (DDP, "strategy.typo", ["1"]),
    (DDP, "simulation.warmup", ["4294967296", "0", "100", "-3"]),
    (DDP, "simulation.iterations", ["1000", "1", "4294967296"]),
    (DDP, "simulation.extra", ["1"]),
    (DDP, "simulation.collectives", ["fast", "1"]),
    (DDP, "simulation.ranks", ["some", "1", "true"]),
    (DDP, "gpus", ["0", "5", "4294967296", "-1", "four", "2.5"]),
    (DDP, "cluster.nodes", ["0", "100000", "-1", "1.5"]),
    (DDP, "cluster.gpus_per_node", ["0", "1000"]),
    (DDP, "cluster.gpu", ["H900", "7"]),
    (DDP, "cluster.nic.gbps", ["0", "1e300", "-1", "1e-300"]),
    (DDP, "cluster.host.memory_gib", ["0", "-1", "x", "1e6", "true"]),
    (DDP, "cluster.intra_node.pcie_gen", ["6", "4.5"]),
    (DDP, "cluster.intra_node.pcie_lanes", ["3"]),
    (DDP, "cluster.intra_node.pcie_latency_us", ["-1", "1e9"]),
    (DDP, "cluster.intra_node.kind", ["ethernet"]),
    (DDP, "cluster.base", ["nope"]),
    (DDP, "cluster.fabric.kind", ["torus"]),
    (DDP, "model", ["resnet5000", "1"]),
    (DDP, "name", ["[1]"]),
    (PIPE, "strategy.microbatches", ["100000", "0", "1.5"]),
    (PIPE, "strategy.schedule", ["zb"]),
    (PIPE, "strategy.balance", ["[1]", "[0,1]", "[1e10,1]"]),
    (PIPE, "strategy.half_efficiency_samples", ["-1"]),
    (HYB, "strategy.tensor_parallel", ["4294967296", "65536", "0"]),
    (HYB, "strategy.pipeline_stages", ["0", "65536"]),
]
UNKNOWN_KEYS = {"training.unknown", "strategy.typo", "simulation.extra", "trainig.batch_per_gpu", "batchsize"}
sets += [(DDP, "trainig.batch_per_gpu", ["3"]), (DDP, "batchsize", ["3"])]
for scen, key, values in sets:
    for i, v in enumerate(values):
        pointer = "/" + key.replace(".", "/")
        if key in ("model",) and v == "resnet5000":
            pointer = "/model"
        if key == "cluster.base":
            pointer = "/cluster/base"
        file = os.path.basename(scen)
        if v == "1e400":  # refused while reading the --set value itself
            file, pointer = "--set " + key, "-"
        if key in UNKNOWN_KEYS:  # a path the scenario has no place for is the --set's fault
            file = "--set " + key
        if key == "trainig.batch_per_gpu":  # the first member the scenario has no place for
            pointer = "/trainig"
        if v == "null":  # removes the member: the object that misses it is named
            pointer = pointer.rsplit("/", 1)[0]
        if key == "strategy.balance" and v != "[1]":
            pointer += "/0"
        name = "set_" + os.path.basename(scen).split(".")[0].replace("-", "_") + "_" + key.replace(".", "_") + f"_{i}"
        case(name, file, pointer, f"run {scen} --set {key}={v}")

case("set_pipeline_plan_too_large", "seed-2gpu-pipelined.json", "/simulation/iterations",
     f"run {PIPE} --set strategy.microbatches=1024 --set simulation.iterations=100")
case("set_ddp_accumulation_plan_too_large", "seed-4gpu-ddp.json", "/simulation/iterations",
     f"run {DDP} --set strategy.gradient_accumulation=1024 --set simulation.iterations=5")
# attention_kernel names the fused kernel of sdpa attention: contradictory beside eager attention
case("set_attention_kernel_with_eager", "seed-4gpu-ddp.json", "/training/attention_kernel",
     f"run {DDP} --set training.attention=eager --set training.attention_kernel=flash2")

# Sharded data parallelism (issue 31's listed bad inputs and each option's own): the scenario and the
# JSON pointer of the member at fault. Parsed before any simulation, so each is quick on the 64-GPU scenario.
FSDP = "scenarios/llama3-8b-fsdp-h100-64gpu.json"
FS = "llama3-8b-fsdp-h100-64gpu.json"
# (a misspelt member through --set names the --set: set_fsdp_mixed_precision_typo below)
for name, pointer, args in [
    ("fsdp_unknown_sharding", "/strategy/sharding", "--set strategy.sharding=quarter_shard"),
    ("fsdp_version_3", "/strategy/version", "--set strategy.version=3"),
    ("fsdp_version_string", "/strategy/version", "--set strategy.version=two"),
    ("fsdp_hybrid_group_not_dividing", "/strategy/shard_group_size",
     "--set strategy.sharding=hybrid_shard --set strategy.shard_group_size=3"),
    ("fsdp_hybrid_group_zero", "/strategy/shard_group_size",
     "--set strategy.sharding=hybrid_shard --set strategy.shard_group_size=0"),
    ("fsdp_group_without_hybrid", "/strategy/shard_group_size", "--set strategy.shard_group_size=8"),
    ("fsdp_options_on_dp", "/strategy/mixed_precision", "--set strategy.kind=dp"),
    ("fsdp_options_on_ddp", "/strategy/mixed_precision", "--set strategy.kind=ddp"),
    ("fsdp_v1_option_on_v2", "/strategy/backward_prefetch", "--set strategy.backward_prefetch=backward_pre"),
    ("fsdp_unknown_prefetch", "/strategy/backward_prefetch",
     "--set strategy.version=1 --set strategy.backward_prefetch=backward_mid"),
    ("fsdp_limit_not_bool", "/strategy/limit_all_gathers", "--set strategy.version=1 --set strategy.limit_all_gathers=2"),
    ("fsdp_reshard_not_dividing", "/strategy/reshard_after_forward", "--set strategy.reshard_after_forward=3"),
    ("fsdp_reshard_too_many", "/strategy/reshard_after_forward", "--set strategy.reshard_after_forward=128"),
    ("fsdp_reshard_int_on_v1", "/strategy/reshard_after_forward", "--set strategy.version=1 --set strategy.reshard_after_forward=8"),
    ("fsdp_reshard_no_shard", "/strategy/reshard_after_forward", "--set strategy.sharding=no_shard --set strategy.reshard_after_forward=true"),
    ("fsdp_reshard_shard_grad_op", "/strategy/reshard_after_forward", "--set strategy.sharding=shard_grad_op --set strategy.reshard_after_forward=true"),
    ("fsdp_reshard_ranks_shard_grad_op", "/strategy/reshard_after_forward", "--set strategy.sharding=shard_grad_op --set strategy.reshard_after_forward=8"),
    ("fsdp_param_dtype_int8", "/strategy/mixed_precision/param_dtype", "--set strategy.mixed_precision.param_dtype=int8"),
    ("fsdp_param_dtype_fp8_on_v1", "/strategy/mixed_precision/param_dtype",
     "--set strategy.version=1 --set strategy.mixed_precision.param_dtype=fp8"),
    ("fsdp_reduce_dtype_fp8", "/strategy/mixed_precision/reduce_dtype", "--set strategy.mixed_precision.reduce_dtype=fp8"),
    ("fsdp_tp_not_dividing", "/gpus", "--set strategy.tensor_parallel=3"),
    ("fsdp_tp_heads", "/strategy/tensor_parallel", "--set strategy.tensor_parallel=64"),
    ("fsdp_sp_without_tp", "/strategy/sequence_parallel", "--set strategy.sequence_parallel=true"),
    ("fsdp_replicate_embedding_without_tp", "/strategy/replicate_embedding", "--set strategy.replicate_embedding=true"),
    ("fsdp_replicate_embedding_not_bool", "/strategy/replicate_embedding",
     "--set strategy.tensor_parallel=2 --set strategy.replicate_embedding=1"),
    ("fsdp_no_sync_not_bool", "/strategy/no_sync", "--set strategy.no_sync=1"),
    ("fsdp_sharded_dtype_fp16", "/strategy/sharded_dtype", "--set strategy.sharded_dtype=fp16"),
    ("fsdp_sharded_dtype_int8", "/strategy/sharded_dtype", "--set strategy.sharded_dtype=int8"),
    ("fsdp_loss_parallel_without_tp", "/strategy/loss_parallel", "--set strategy.loss_parallel=false"),
    ("fsdp_tp_gather_without_tp", "/strategy/tensor_parallel_gather", "--set strategy.tensor_parallel_gather=linear"),
    ("fsdp_cpu_offload_string", "/strategy/cpu_offload", "--set strategy.cpu_offload=yes"),
    ("fsdp_cpu_offload_number", "/strategy/cpu_offload", "--set strategy.cpu_offload=1"),
    ("fsdp_cpu_offload_pin_on_v1", "/strategy/cpu_offload/pin_memory",
     "--set strategy.version=1 --set strategy.cpu_offload.pin_memory=false"),
    ("fsdp_cpu_offload_pin_not_bool", "/strategy/cpu_offload/pin_memory", "--set strategy.cpu_offload.pin_memory=1"),
    ("fsdp_cpu_offload_threads_zero", "/strategy/cpu_offload/omp_num_threads", "--set strategy.cpu_offload.omp_num_threads=0"),
    ("fsdp_cpu_offload_threads_fraction", "/strategy/cpu_offload/omp_num_threads", "--set strategy.cpu_offload.omp_num_threads=1.5"),
    ("fsdp_cpu_offload_no_shard", "/strategy/cpu_offload", "--set strategy.sharding=no_shard --set strategy.cpu_offload=true"),
    ("fsdp_cpu_offload_v1_accumulation", "/strategy/cpu_offload",
     "--set strategy.version=1 --set strategy.cpu_offload=true --set training.global_batch=256"),
    ("fsdp_tp_gather_unknown", "/strategy/tensor_parallel_gather",
     "--set strategy.tensor_parallel=2 --set strategy.tensor_parallel_gather=row"),
    ("fsdp_loss_parallel_not_bool", "/strategy/loss_parallel",
     "--set strategy.tensor_parallel=2 --set strategy.loss_parallel=no"),
    ("zero_missing_stage", "/strategy", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null"),
    ("zero_stage_4", "/strategy/stage", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=4"),
    ("zero_stage_0", "/strategy/stage", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=0"),
    ("zero_prefetch_on_stage_2", "/strategy/stage3_prefetch_bucket_size",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.stage3_prefetch_bucket_size=1e7"),
    ("zero_bucket_zero", "/strategy/reduce_bucket_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.reduce_bucket_size=0"),
    ("zero_reuse_distance_negative", "/strategy/stage3_max_reuse_distance",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.stage3_max_reuse_distance=-1"),
    ("zero_reuse_distance_on_stage_1", "/strategy/stage3_max_reuse_distance",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=1 --set strategy.stage3_max_reuse_distance=1e8"),
    ("zero_live_parameters_negative", "/strategy/stage3_max_live_parameters",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.stage3_max_live_parameters=-5"),
    ("zero_live_parameters_on_stage_2", "/strategy/stage3_max_live_parameters",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.stage3_max_live_parameters=1e9"),
    ("zero_mics_not_dividing", "/strategy/mics_shard_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.mics_shard_size=5"),
    ("zero_mics_one", "/strategy/mics_shard_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.mics_shard_size=1"),
    ("zero_mics_on_stage_2", "/strategy/mics_shard_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.mics_shard_size=8"),
    ("zero_hpz_with_mics", "/strategy/zero_hpz_partition_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.mics_shard_size=8 --set strategy.zero_hpz_partition_size=8"),
    ("zero_hpz_beyond_gpus", "/strategy/zero_hpz_partition_size", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.zero_hpz_partition_size=128"),
    ("zero_quantized_weights_on_stage_1", "/strategy/zero_quantized_weights", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=1 --set strategy.zero_quantized_weights=true"),
    ("zero_quantized_weights_not_bool", "/strategy/zero_quantized_weights", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.zero_quantized_weights=8"),
    ("zero_quantized_gradients_with_mics", "/strategy/zero_quantized_gradients", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.mics_shard_size=8 --set strategy.zero_quantized_gradients=true"),
    ("zero_quantized_gradients_partial_node", "/strategy/zero_quantized_gradients", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.zero_quantized_gradients=true --set gpus=12 --set cluster.nodes=2 --set training.global_batch=24"),
    ("zero_multi_rank_not_bool", "/strategy/use_multi_rank_bucket_allreduce",
     "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.use_multi_rank_bucket_allreduce=maybe"),
    ("zero_offload_nvme", "/strategy/offload_optimizer/device", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.offload_optimizer.device=nvme"),
    ("zero_offload_not_object", "/strategy/offload_optimizer", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.offload_optimizer=cpu"),
    ("zero_offload_partial_ratio", "/strategy/offload_optimizer/ratio", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.offload_optimizer.device=cpu --set strategy.offload_optimizer.ratio=0.3"),
    ("zero_offload_threads_without_cpu", "/strategy/offload_optimizer/omp_num_threads", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.offload_optimizer.device=none --set strategy.offload_optimizer.omp_num_threads=4"),
    ("zero_offload_param_on_stage_2", "/strategy/offload_param", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=2 --set strategy.offload_param.device=cpu"),
    ("zero_offload_param_pin_not_bool", "/strategy/offload_param/pin_memory", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.offload_param.device=cpu --set strategy.offload_param.pin_memory=yes"),
    ("zero_offload_with_qgz", "/strategy/zero_quantized_gradients", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.zero_quantized_gradients=true --set strategy.offload_optimizer.device=cpu"),
    ("zero_sharding_option", "/strategy/sharding", "--set strategy.kind=zero --set strategy.sharding=null --set strategy.mixed_precision=null --set strategy.stage=3 --set strategy.sharding=full_shard"),
]:
    case("set_" + name, FS, pointer, f"run {FSDP} {args}")
case("set_fsdp_mixed_precision_typo", "--set strategy.mixed_precision.reduce_type", "/strategy/mixed_precision/reduce_type",
     f"run {FSDP} --set strategy.mixed_precision.reduce_type=fp32")
case("set_fsdp_cpu_offload_unknown_member", "--set strategy.cpu_offload", "/strategy/cpu_offload/offload_params",
     f'run {FSDP} --set strategy.cpu_offload={{"offload_params":true}}')

# Control characters quoted back from the input stay on the one line (\n, \x1b written out)
case("set_model_newline", "seed-4gpu-ddp.json", "/model", f'run {DDP} --set model="res\\nnet"')
case("set_precision_newline", "seed-4gpu-ddp.json", "/training/precision", f'run {DDP} --set training.precision="x\\ny"')
case("set_base_escape", "seed-4gpu-ddp.json", "/cluster/base", f'run {DDP} --set cluster.base="a\\u001bb"')

# --set itself
case("set_no_equals", "--set", "-", f"run {DDP} --set gpus")
case("set_empty_key", "--set", "-", f"run {DDP} --set =3")
case("set_empty_component", "--set", "-", f"run {DDP} --set training..epochs=1")
case("set_parent_not_object", "--set", "/training/batch_per_gpu", f"run {DDP} --set training.batch_per_gpu.x=1")
# --set paths are JSON pointers: an array element by its index ("-" appends), escaped keys
case("set_array_index_out_of_range", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.2=3")
case("set_array_index_huge", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.18446744073709551616=3")
case("set_array_index_leading_zero", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.01=3")
case("set_array_index_word", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.first=3")
case("set_array_index_negative", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.-1=3")
case("set_array_dash_not_last", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.-.x=3")
case("set_array_dash_null", "--set", "/strategy/balance", f"run {PIPE} --set strategy.balance.-=null")
case("set_array_element_bad", "seed-2gpu-pipelined.json", "/strategy/balance/1", f"run {PIPE} --set strategy.balance.1=-4")
case("set_array_appended_bad", "seed-2gpu-pipelined.json", "/strategy/balance", f"run {PIPE} --set strategy.balance.-=1")
case("set_index_into_string", "--set", "/strategy/kind", f"run {PIPE} --set strategy.kind.0=x")
case("set_key_with_slash", "--set training.a/b", "/training/a~1b", f"run {DDP} --set training.a/b=1")
case("set_key_with_tilde", "--set training.a~1b", "/training/a~01b", f"run {DDP} --set training.a~1b=1")
# Topology layers are merge patches: a null removes the preset's member (here a required one)
case("set_cluster_null_removes_required", "seed-4gpu-ddp.json", "/cluster",
     f'run {DDP} --set cluster.intra_node={{"pcie_latency_us":null}}')
case("set_value_1e400", "--set training.epochs", "-", f"run {DDP} --set training.epochs=1e400")

# Scenario files
case("scenario_missing", "absent.json", "-", "run tests/bad_inputs/files/absent.json")
case("scenario_directory", "tests/bad_inputs/files", "-", "run tests/bad_inputs/files")
case("scenario_empty", "topo_empty.json", "-", f"run {F}topo_empty.json")
case("scenario_deep", "topo_deep.json", "-", f"run {F}topo_deep.json")
case("scenario_bad_utf8", "topo_bad_utf8.json", "-", f"run {F}topo_bad_utf8.json")
case("scenario_not_object", "topo_not_object.json", "-", f"run {F}topo_not_object.json")
case("scenario_nul_tail", "topo_nul_tail.json", "-", f"run {F}topo_nul_tail.json")

# Topology files (the pointer where the message must name one)
TOPO_POINTERS = {
    "topo_pcie_nvlink_lane_gbytes.json": "/intra_node/nvlink_lane_gbytes",
    "topo_mesh_max_gpus.json": "/intra_node/max_gpus",
    "topo_nvswitch_nvlink_pairs.json": "/intra_node/nvlink_pairs",
    "topo_gpus_per_switch_without_switches.json": "/intra_node/gpus_per_pcie_switch",
    "topo_interconnect_one_socket.json": "/intra_node/cpu_interconnect",
    "topo_mesh_pairs_fewer_gpus.json": "/intra_node/nvlink_pairs",
    "topo_nvswitch_max_gpus_below_node.json": "/intra_node/max_gpus",
    "topo_calibration_missing.json": "/calibration",
    "topo_calibration_number.json": "/calibration",
    "topo_base_file_missing.json": "/base",
}
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("topo_"):
        case("topology_" + f[5:-5], f, TOPO_POINTERS.get(f, "-"), f"topology check {F}{f}")
case("topology_directory", "tests/bad_inputs", "-", "topology check tests/bad_inputs")
case("topology_nodes_zero_cli", "--nodes", "-", "topology show pcie-box --nodes 0")
case("topology_nodes_huge_cli", "--nodes", "-", "topology check pcie-box --nodes 100000")
# Topology members the file's intra_node.kind does not use are refused where the user gives them
# (the topology_* cases above: topo_pcie_nvlink_lane_gbytes, ...), and through --set.
case("set_pcie_nvlink_lane_gbytes", "seed-2gpu-pipelined.json", "/cluster/intra_node/nvlink_lane_gbytes",
     f"run {PIPE} --set cluster.intra_node.nvlink_lane_gbytes=-5")
case("set_pcie_max_gpus", "seed-4gpu-ddp.json", "/cluster/intra_node/max_gpus", f"run {DDP} --set cluster.intra_node.max_gpus=-7")
# A topology's calibration is checked by topology check and nccl-tests, as run checks it.
for f in ["topo_calibration_missing", "topo_calibration_number"]:
    case(f"nccl_tests_{f[5:]}", f + ".json", "/calibration", f"nccl-tests --topology {F}{f}.json")
# A contradiction between the user's member and the preset's is the user's (file or --set), not the preset's.
case("set_pcie_switches_too_few", "imagenet-resnet50-32gpu.json", "/cluster/intra_node/pcie_switches",
     "run scenarios/imagenet-resnet50-32gpu.json --set cluster.intra_node.pcie_switches=3")
case("explain_mesh_pairs_fewer_gpus", "topo_mesh_pairs_fewer_gpus.json", "/intra_node/nvlink_pairs",
     f"explain ddp --gpus 4 --cluster {F}topo_mesh_pairs_fewer_gpus.json")
# A missing file named inside a scenario is the scenario's error, at the member naming it.
case("set_cluster_calibration_missing", "seed-4gpu-ddp.json", "/cluster/calibration",
     f"run {DDP} --set cluster.calibration=absent_calibration.json")
case("set_cluster_base_missing", "seed-4gpu-ddp.json", "/cluster/base", f"run {DDP} --set cluster.base=absent_topology.json")
case("set_profile_missing", "seed-4gpu-ddp.json", "/training/compute/profile",
     f"run {DDP} --set model=toymodel --set training.compute.profile=absent_profile.json")

# Model files
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("model_"):
        case(f[:-5], f, "-", f"run {DDP} --set model={F}{f}")

# Inline models (a transformer from its hyperparameters) through --set on a scenario that has one;
# tests/unit/model_transformer_family.cpp checks the exact message of each "inline_model" case.
LLAMA = "tests/data/scenarios/inline_llama_ddp.json"
for name, pointer, sets in [
        ("family_unknown", "/model/family", ["model.family=lama"]),
        ("family_number", "/model/family", ["model.family=1"]),
        ("heads_not_dividing", "/model/heads", ["model.heads=30"]),
        ("heads_above_hidden", "/model/heads", ["model.heads=4096"]),
        ("kv_heads_not_dividing", "/model/kv_heads", ["model.kv_heads=5"]),
        ("kv_heads_above_heads", "/model/kv_heads", ["model.kv_heads=64"]),
        ("kv_heads_zero", "/model/kv_heads", ["model.kv_heads=0"]),
        ("hidden_zero", "/model/hidden", ["model.hidden=0"]),
        ("hidden_negative", "/model/hidden", ["model.hidden=-2048"]),
        ("hidden_huge", "/model/hidden", ["model.hidden=1000000000"]),
        ("hidden_fraction", "/model/hidden", ["model.hidden=2048.5"]),
        ("hidden_string", "/model/hidden", ['model.hidden="2048"']),
        ("hidden_bool", "/model/hidden", ["model.hidden=true"]),
        ("layers_zero", "/model/layers", ["model.layers=0"]),
        ("layers_huge", "/model/layers", ["model.layers=100000"]),
        ("heads_zero", "/model/heads", ["model.heads=0"]),
        ("seq_len_zero", "/model/seq_len", ["model.seq_len=0"]),
        ("seq_len_huge", "/model/seq_len", ["model.seq_len=1000000000"]),
        ("vocab_negative", "/model/vocab", ["model.vocab=-1"]),
        ("ffn_zero", "/model/ffn", ["model.ffn=0"]),
        ("ffn_huge", "/model/ffn", ["model.ffn=1000000000"]),
        ("tied_string", "/model/tied_embeddings", ["model.tied_embeddings=yes"]),
        ("no_bias_not_mpt", "/model/no_bias", ["model.no_bias=false"]),
        ("learned_pos_emb_not_mpt", "/model/learned_pos_emb", ["model.learned_pos_emb=true"]),
        ("no_bias_string", "/model/no_bias", ["model.family=mpt", "model.no_bias=no"]),
        ("name_empty", "/model/name", ['model.name=""']),
        ("name_number", "/model/name", ["model.name=5"]),
        ("unknown_member", "/model/hiden", ["model.hiden=1"]),
        ("missing_vocab", "/model", ["model.vocab=null"]),
        ("missing_family", "/model", ["model.family=null"]),
        ("array", "/model", ["model=[1]"]),
        ("tensor_too_large", "/model", ["model.hidden=65536", "model.vocab=16777216"]),
        ("flops_too_large", "/model", ["model.seq_len=16777216"])]:
    file = "--set model.hiden" if name == "unknown_member" else "inline_llama_ddp.json"
    case("inline_model_" + name, file, pointer, f"run {LLAMA} " + " ".join("--set " + s for s in sets))
case("set_inline_model_member_of_named_model", "--set", "/model", f"run {DDP} --set model.hidden=4096")
# socket_unique placement with more processes on a socket than its cores (issue 32)
case("set_affinity_socket_unique_no_cores", "seed-4gpu-ddp.json", "/training/loader/affinity",
     f"run {DDP} --set training.loader.affinity=socket_unique --set cluster.host.cores=2")

# Calibration files: through a scenario, and through validate
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("cal_"):
        case("calibration_" + f[4:-5], f, "-",
             f"validate tests/data/validation/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt --topology dgx1-v100 --calibration {F}{f}")
case("calibration_directory", "tests/bad_inputs", "-",
     "validate tests/data/validation/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt --topology dgx1-v100 --calibration tests/bad_inputs")

# Compute profiles
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("profile_"):
        # A profile's path is taken beside the scenario (scenarios/): from there, ../tests/...
        case(f[:-5], f, "-",
             f"run {DDP} --set model=toymodel --set training.compute.profile=../{F}{f}")
        case("calibrate_" + f[:-5], f, "-", f"calibrate {F}{f} --topology dgx1-v100 -o @OUT@")

# nccl-tests logs: validate, and calibrate (which must leave no output file)
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("nccl_"):
        case("validate_" + f[:-4], f, "-", f"validate {F}{f} --topology dgx1-v100")
        case("calibrate_" + f[:-4], f, "-", f"calibrate {F}{f} --topology dgx1-v100 -o @OUT@")
case("validate_directory", "tests/bad_inputs", "-", "validate tests/bad_inputs --topology dgx1-v100")

# host_costs.py load-curve JSON (issue 32)
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("hostcosts_"):
        case("calibrate_" + f[:-5], f, "-", f"calibrate {F}{f} --topology dgx1-v100 -o @OUT@")

# Bandwidth logs
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("bw_"):
        case("calibrate_" + os.path.splitext(f)[0], f, "-", f"calibrate {F}{f} --topology dgx1-v100 -o @OUT@")

# Command-line values
V100 = "tests/data/validation/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt"
case("nccl_tests_factor_tiny", "command line", "-", "nccl-tests --topology dgx1-v100 -b 8 -e 8G -f 1.0000001")
case("nccl_tests_factor_one", "command line", "-", "nccl-tests --topology dgx1-v100 -f 1")
case("nccl_tests_factor_nan", "command line", "-", "nccl-tests --topology dgx1-v100 -f nan")
case("nccl_tests_size_overflow", "command line", "-", "nccl-tests --topology dgx1-v100 -e 99999999999999G")
case("nccl_tests_size_text", "command line", "-", "nccl-tests --topology dgx1-v100 -b lots")
case("nccl_tests_algo_collnet_only", "command line", "-", "nccl-tests --topology dgx1-v100 --algo CollNetDirect,CollNetChain")
case("nccl_tests_algo_exclude_all", "command line", "-", "nccl-tests --topology dgx1-v100 --algo ^Ring,Tree,NVLS,NVLSTree,PAT")
case("nccl_tests_algo_unknown", "command line", "-", "nccl-tests --topology dgx1-v100 --algo Star")
case("nccl_tests_proto_exclude_all", "command line", "-", "nccl-tests --topology dgx1-v100 --proto ^LL,LL128,Simple")
case("nccl_tests_nodes_zero", "--nodes", "-", "nccl-tests --topology dgx1-v100 --nodes 0")
case("nccl_tests_root_negative", "command line", "-", "nccl-tests --topology dgx1-v100 --op broadcast -r -1")
case("nccl_tests_ngpus_bad", "command line", "-", "nccl-tests --topology dgx1-v100 -g 3")
case("nccl_tests_ngpus_zero", "command line", "-", "nccl-tests --topology dgx1-v100 -g 0")
case("calibrate_compute_above_peak", "bench_compute_sample.json", "/kernels/4",
     "calibrate tests/data/calibration/compute/bench_compute_sample.json --topology pcie-box -o @OUT@")
case("calibrate_hostcosts_twice", "host_loadcurve.json", "-",
     "calibrate calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json "
     "calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json --topology dgx-a100 -o @OUT@")
case("nccl_tests_alltoall_too_many_gpus", "--nodes", "-", "nccl-tests --topology hgx-h100 --nodes 512 --op alltoall -b 1M -e 1M")
case("validate_nodes_zero", "--nodes", "-", f"validate {V100} --topology dgx1-v100 --nodes 0")
case("validate_algo_collnet", "command line", "-", f"validate {V100} --topology dgx1-v100 --algo CollNetDirect")
# An NCCL_ALGO / NCCL_PROTO that leaves nothing the topology runs (no NVLS, NVLSTree or PAT on one DGX-1
# node; PAT is one GPU per node) fails as NCCL's call does (src/enqueue.cc topoGetAlgoInfo), not as Ring/Simple.
case("nccl_tests_algo_nvls_unavailable", "command line", "-", "nccl-tests --topology dgx1-v100 -b 1M -e 1M --algo nvls")
case("nccl_tests_algo_pat_unavailable", "command line", "-", "nccl-tests --topology dgx1-v100 -b 1M -e 1M --op all_gather --algo pat")
case("validate_algo_nvls_unavailable", V100, "-", f"validate {V100} --topology dgx1-v100 --algo nvls")
case("calibrate_algo_nvlstree_unavailable", V100, "-", f"calibrate {V100} --topology dgx1-v100 --algo nvlstree -o @OUT@")
case("calibrate_nodes_zero", "--nodes", "-", f"calibrate {V100} --topology dgx1-v100 --nodes 0 -o @OUT@")
case("calibrate_out_directory", "tests/bad_inputs", "-", f"calibrate {V100} --topology dgx1-v100 -o tests/bad_inputs")
case("run_trace_directory", "tests/bad_inputs", "-", f"run {DDP} --trace tests/bad_inputs")
case("run_trace_missing_dir", "/nonexistent/t.json", "-", f"run {DDP} --trace /nonexistent/t.json")

# Issue 16's new options: --trace-iterations, nccl-tests' own flags, validate --gpu-order, --vary paths.
for i, v in enumerate(["0", "99", "2-1", "0-99", "x", "-1", "1-"]):
    case(f"run_trace_iterations_{i}", "--trace-iterations", "-", f"run {DDP} --trace @OUT@ --trace-iterations {v}")
nccl_flags = [("datatype_all", "-d", "-d all"), ("datatype_unknown", "-d", "-d float33"),
              ("redop_all", "--op", "-o all"), ("redop_unknown", "--op", "-o summ"),
              ("redop_twice", "--op", "-o sum -o max"), ("collective_twice", "--op", "--op all_gather -o broadcast"),
              ("blocking", "-z", "-z 1"), ("agg_iters", "-m", "-m 2"), ("cudagraph", "-G", "-G 1"),
              ("threads_3", "-t", "-t 3"), ("threads_0", "-t", "-t 0"), ("threads_x_gpus", "-t", "-t 4 -g 4"),
              ("average_4", "command line", "-a 4"), ("iters_0", "command line", "-n 0"),
              ("warmup_negative", "command line", "-w -1"), ("check_text", "command line", "-c x"),
              ("step_zero", "command line", "-i 0"), ("step_text", "command line", "-i lots"),
              ("step_tiny", "command line", "-b 8 -e 8G -i 8")]
for name, file, flags in nccl_flags:
    case("nccl_tests_" + name, file, "-", f"nccl-tests --topology dgx1-v100 {flags}")
A100_P2P = "tests/data/calibration/bandwidth/p2p_h2d_8xA100_SXM4_40GB_DGXA100_GPUInspector.txt"
for i, v in enumerate(["0,0,1,2,3,4,5,6", "0,1,2", "0,1,2,3,4,5,6,8", "x", "0,1,2,3,4,5,6,7,8", "-1,1,2,3,4,5,6,7"]):
    case(f"validate_gpu_order_{i}", "--gpu-order", "-", f"validate {A100_P2P} --topology dgx-a100 --gpu-order {v}")
case("validate_gpu_order_nccl_log", "--gpu-order", "-", f"validate {V100} --topology dgx1-v100 --gpu-order 1,0")
case("sweep_vary_unknown_path", "--vary trainig.batch_per_gpu", "/trainig",
     f"sweep {DDP} --vary trainig.batch_per_gpu=1,2")

# Measured training runs (dtsim validate RUNS.csv): every message names the CSV (its line and column,
# or the pointer of the row's scenario).
for f in sorted(os.listdir(os.path.join(HERE, "files"))):
    if f.startswith("runs_"):
        case("validate_" + f[:-4], f, "-", f"validate {F}{f}")
case("validate_runs_missing", "absent.csv", "-", "validate tests/bad_inputs/files/absent.csv")
# Options of log validation would be ignored for a runs CSV (each row names its own machine).
for i, opt in enumerate(["--calibration tests/data/calibration/cal_dgx1_v100.json", "--nodes 2", "--algo Ring", "--proto LL",
                         "--gpu-order 1,0", "--topology hgx-h100"]):
    case(f"validate_runs_with_log_option_{i}", "command line", "-", f"validate tests/data/training/runs.csv {opt}")

# The input pipeline through --set: the loader block, and the host's cores.
for key, values in [
        ("training.loader", ["5", "[1]", "\"fast\""]),
        ("training.loader.dataset", ["imagenet-png", "7", "[]"]),
        ("training.loader.workers", ["\"4\"", "true", "1e9"]),
        ("training.loader.per_sample_ms", ["1e5", "1e300", "-0.5", "nan"]),
        ("training.loader.input_bytes_per_sample", ["-1", "1e11", "x"]),
        ("training.loader.prefetch", ["2"]),
        ("cluster.host.cores", ["0", "-1", "1.5", "5000", "\"8\"", "4294967296"]),
        ("cluster.host.threads_per_core", ["0", "9"]),
        ("cluster.host.cpu", ["7"]),
        ("cluster.host.sockets", ["2"]),
        ("cluster.host", ["64"])]:
    for i, v in enumerate(values):
        pointer = "/" + key.replace(".", "/")
        if key == "training.loader.workers" and v == "1e9":
            pointer = "/training/loader/workers"
        file = "seed-4gpu-ddp.json"
        if key in ("training.loader.prefetch", "cluster.host.sockets"):  # a member only --set brought in
            file = "--set " + key
        if v == "nan":  # not JSON: the bare word "nan" is a string
            pass
        name = "set_" + key.replace(".", "_") + f"_{i}"
        case(name, file, pointer if key != "cluster.host.cores" or True else "-", f"run {DDP} --set {key}={v}")

# A host whose cores all go to the training processes' main threads: the workers would never load a batch.
case("set_host_cores_below_processes", "seed-4gpu-ddp.json", "/cluster/host/cores",
     f"run {DDP} --set cluster.host.cores=1 --set training.loader.workers=4096")
case("set_host_cores_equal_processes_smt", "seed-4gpu-ddp.json", "/cluster/host/cores",
     f"run {DDP} --set cluster.host.cores=2 --set cluster.host.threads_per_core=1")
case("runs_host_cores_below_processes", "runs_host_cores_one.csv", "-", f"validate {F}runs_host_cores_one.csv")

# Strategy options that gave negative or absurd compute and host times (accepted before)
case("set_ddp_half_efficiency_negative", "seed-4gpu-ddp.json", "/strategy/half_efficiency_samples",
     f"run {DDP} --set strategy.half_efficiency_samples=-1")
case("set_ddp_half_efficiency_huge", "seed-4gpu-ddp.json", "/strategy/half_efficiency_samples",
     f"run {DDP} --set strategy.half_efficiency_samples=1e18")
case("set_dp_half_efficiency_negative", "seed-4gpu-ddp.json", "/strategy/half_efficiency_samples",
     f"run {DDP} --set strategy.kind=dp --set strategy.half_efficiency_samples=-63")
case("set_dp_launch_overhead_huge", "seed-4gpu-ddp.json", "/strategy/launch_overhead_us_per_layer",
     f"run {DDP} --set strategy.kind=dp --set strategy.launch_overhead_us_per_layer=1e18")
case("set_dp_replicate_huge", "seed-4gpu-ddp.json", "/strategy/replicate_us_per_module",
     f"run {DDP} --set strategy.kind=dp --set strategy.replicate_us_per_module=1e7")
case("set_pipeline_half_efficiency_huge", "seed-2gpu-pipelined.json", "/strategy/half_efficiency_samples",
     f"run {PIPE} --set strategy.half_efficiency_samples=1e12")

# run --html / --trace: bad flags and outputs before any work, and no output left when one fails
case("run_html_directory", "tests/bad_inputs", "-", f"run {DDP} --html tests/bad_inputs")
case("run_html_missing_dir", "/nonexistent/r.html", "-", f"run {DDP} --html /nonexistent/r.html")
case("run_gpus_shown_out_of_range", "--gpus-shown", "-", f"run {DDP} --html @OUT@ --gpus-shown 0-99")
case("run_gpus_shown_reversed", "--gpus-shown", "-", f"run {DDP} --html @OUT@ --gpus-shown 3-1")
case("run_gpus_shown_text", "--gpus-shown", "-", f"run {DDP} --html @OUT@ --gpus-shown first")
case("run_gpus_shown_negative", "--gpus-shown", "-", f"run {DDP} --html @OUT@ --gpus-shown -1")
case("run_gpus_shown_empty_piece", "--gpus-shown", "-", f"run {DDP} --html @OUT@ --gpus-shown 0,,1")
case("run_trace_then_bad_gpus_shown", "--gpus-shown", "-", f"run {DDP} --trace @OUT@ --html @OUT@.html --gpus-shown 9")
case("run_trace_then_html_directory", "tests/bad_inputs", "-", f"run {DDP} --trace @OUT@ --html tests/bad_inputs")
case("run_links_shown_negative", "command line", "-", f"run {DDP} --html @OUT@ --links-shown -1")
case("run_links_shown_text", "command line", "-", f"run {DDP} --html @OUT@ --links-shown many")

# report
case("report_output_directory", "tests/bad_inputs", "-", f"report {DDP} -o tests/bad_inputs")
case("report_output_missing_dir", "/nonexistent/r.html", "-", f"report {DDP} -o /nonexistent/r.html")
case("report_output_missing", "command line", "-", f"report {DDP}")
case("report_scaling_zero", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus 0,4")
case("report_scaling_text", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus four")
case("report_scaling_negative", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus -2")
case("report_scaling_huge", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus 1,4294967296")
case("report_scaling_empty_piece", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus 1,,4")
case("report_scaling_too_many", "--scaling-gpus", "-", f"report {DDP} -o @OUT@ --scaling-gpus " + ",".join(["1"] * 65))
# GPU counts given to --scaling-gpus are refused as sweep --gpus refuses them (DataParallel is one node
# of 4 GPUs); only the default curve's points are left out with a warning.
DP = "scenarios/seed-4gpu-dp.json"
case("report_scaling_point_refused", "--scaling-gpus", "-", f"report {DP} -o @OUT@ --scaling-gpus 2,16")
case("report_gpus_shown_bad", "--gpus-shown", "-", f"report {DDP} -o @OUT@ --scaling-gpus none --gpus-shown 0-4")
case("report_compare_unknown", "--compare-strategies", "-", f"report {DDP} -o @OUT@ --compare-strategies dp,zero")
case("report_compare_empty_piece", "--compare-strategies", "-", f"report {DDP} -o @OUT@ --compare-strategies dp,")
case("report_jobs_zero", "command line", "-", f"report {DDP} -o @OUT@ -j 0")
case("report_jobs_text", "command line", "-", f"report {DDP} -o @OUT@ -j many")
case("report_bad_set", "seed-4gpu-ddp.json", "/gpus", f"report {DDP} -o @OUT@ --set gpus=0")
case("report_scenario_missing", "absent.json", "-", "report tests/bad_inputs/files/absent.json -o @OUT@")

# compare
case("compare_strategy_unknown", "--strategies", "-", f"compare {DDP} --strategies ddp,zero")
case("compare_strategy_empty_piece", "--strategies", "-", f"compare {DDP} --strategies ,ddp")
case("compare_html_directory", "tests/bad_inputs", "-", f"compare {DDP} --html tests/bad_inputs")
case("compare_html_missing_dir", "/nonexistent/c.html", "-", f"compare {DDP} --html /nonexistent/c.html")
case("compare_scenario_missing", "absent.json", "-", f"compare {DDP} tests/bad_inputs/files/absent.json --html @OUT@")
case("compare_bad_set", "seed-4gpu-ddp.json", "/training/epochs", f"compare {DDP} --set training.epochs=0 --html @OUT@")
case("compare_jobs_zero", "command line", "-", f"compare {DDP} -j 0")
case("compare_jobs_huge", "command line", "-", f"compare {DDP} -j 100000")
case("compare_no_scenario", "command line", "-", "compare --strategies ddp")

# sweep: --vary grammar and values, --gpus, outputs, --emit, -j
vary_cases = [
    ("no_equals", "--vary", "gpus"), ("empty_key", "--vary", "=1,2"), ("empty_values", "--vary", "gpus="),
    ("empty_value", "--vary", "training.epochs=1,,2"), ("empty_component", "--vary", "training..epochs=1,2"),
    ("unbalanced_brace", "--vary", "name={1,2"), ("unbalanced_quote", "--vary", 'name="a,b'),
    ("value_1e400", "--vary", "training.epochs=1,1e400"), ("gpus_zero", "--vary", "gpus=0,4"),
    ("gpus_text", "--vary", "gpus=four"), ("gpus_huge", "--vary", "gpus=4,2000000"), ("gpus_fraction", "--vary", "gpus=1.5"),
    ("twice", "--vary", "training.epochs=1,2 --vary training.epochs=3"),
    ("grid_too_large", "--vary", "training.epochs=" + ",".join(str(i) for i in range(1, 102)) +
     " --vary training.batch_per_gpu=" + ",".join(str(i) for i in range(1, 102))),
]
for name, file, args in vary_cases:
    case("sweep_vary_" + name, file, "-", f"sweep {DDP} --vary {args}")
case("sweep_vary_bad_point", "seed-4gpu-ddp.json", "/training/epochs", f"sweep {DDP} --vary training.epochs=1,-1 --csv @OUT@")
case("sweep_vary_unknown_key", "--vary training.epoch", "/training/epoch", f"sweep {DDP} --vary training.epoch=1,2 --csv @OUT@")
case("sweep_vary_and_gpus", "--vary", "-", f"sweep {DDP} --gpus 1,2 --vary gpus=4")
# Keys that undo each other (another way of giving the batch or the compute times, the same key by
# --set): one axis, or the --set, would have no effect on the points.
case("sweep_vary_batch_and_micro_batch", "--vary", "-",
     f"sweep {DDP} --vary training.batch_per_gpu=16,32 --vary training.micro_batch=8 --csv @OUT@")
case("sweep_vary_two_compute_sources", "--vary", "-",
     f"sweep {DDP} --vary training.compute.step_time_s=0.1,0.2 --vary training.compute.single_gpu_throughput=300 --csv @OUT@")
case("sweep_vary_and_set_gpus", "--vary", "-", f"sweep {DDP} --vary gpus=1,2 --set gpus=8 --csv @OUT@")
case("sweep_gpus_and_set_gpus", "--gpus", "-", f"sweep {DDP} --gpus 1,2 --set gpus=8 --emit @OUT@")
case("sweep_vary_removes_set_compute", "--vary", "-",
     f"sweep {DDP} --vary training.compute.step_time_s=0.1,0.2 --set training.compute.single_gpu_throughput=300")
case("sweep_gpus_zero", "--gpus", "-", f"sweep {DDP} --gpus 0,4")
case("sweep_gpus_text", "--gpus", "-", f"sweep {DDP} --gpus 1,x")
# An empty piece of --gpus is refused as one of --vary gpus=... is (CLI11's delimiter dropped it: 1,2)
case("sweep_gpus_empty_piece", "--gpus", "-", f"sweep {DDP} --gpus 1,,2 --csv @OUT@")
case("sweep_gpus_trailing_comma", "--gpus", "-", f"sweep {DDP} --gpus 1,2, --csv @OUT@")
case("sweep_gpus_too_many", "seed-4gpu-ddp.json", "-", f"sweep {DDP} --gpus 1,8 --set cluster.nodes=1 --csv @OUT@")
case("sweep_nothing_varied", "command line", "-", f"sweep {DDP}")
case("sweep_no_scenario", "command line", "-", "sweep --gpus 1,2")
case("sweep_csv_directory", "tests/bad_inputs", "-", f"sweep {DDP} --gpus 1,2 --csv tests/bad_inputs")
case("sweep_html_missing_dir", "/nonexistent/s.html", "-", f"sweep {DDP} --gpus 1,2 --html /nonexistent/s.html")
case("sweep_csv_then_html_directory", "tests/bad_inputs", "-", f"sweep {DDP} --gpus 1,2 --csv @OUT@ --html tests/bad_inputs")
case("sweep_jobs_zero", "command line", "-", f"sweep {DDP} --gpus 1,2 -j 0")
case("sweep_jobs_huge", "command line", "-", f"sweep {DDP} --gpus 1,2 -j 1000")
case("sweep_emit_onto_file", "README.md", "-", f"sweep {DDP} --gpus 1,2 --emit README.md")
case("sweep_emit_bad_point", "seed-4gpu-ddp.json", "/training/epochs", f"sweep {DDP} --vary training.epochs=1,0 --emit @OUT@")
case("sweep_emit_and_collect", "command line", "-", f"sweep {DDP} --gpus 1,2 --collect tests/bad_inputs")
# --emit refuses a point as `dtsim run` would (read and planned), before writing anything: a strategy
# member, a strategy option's value, a model that only the plan reads.
FS8 = "scenarios/llama3-8b-fsdp-h100-64gpu.json"
case("sweep_emit_unknown_strategy_member", "--set strategy.bogus", "/strategy/bogus",
     f"sweep {FS8} --gpus 8 --emit @OUT@ --set strategy.bogus=7")
case("sweep_emit_bad_sharding", "llama3-8b-fsdp-h100-64gpu.json", "/strategy/sharding",
     f"sweep {FS8} --gpus 8 --emit @OUT@ --set strategy.sharding=bogus")
case("sweep_emit_unknown_model", "llama3-8b-fsdp-h100-64gpu.json", "/model",
     f"sweep {FS8} --gpus 8 --emit @OUT@ --set model=bogus")
case("sweep_emit_tp_on_cnn", "seed-4gpu-ddp.json", "/strategy/tensor_parallel",
     f"sweep {DDP} --gpus 2,4 --emit @OUT@ --set strategy.kind=fsdp --set strategy.tensor_parallel=2")
# Outputs checked before any point runs: two outputs on one path, an output in a missing folder.
case("sweep_csv_and_html_same", "sweep_csv_and_html_same.json", "-", f"sweep {DDP} --gpus 1,2 --csv @OUT@ --html @OUT@")
case("calibrate_out_missing_dir", "/nonexistent/c.json", "-", f"calibrate {V100} --topology dgx1-v100 -o /nonexistent/c.json")
# reference_compute is read with the scenario, in the range of training.compute.single_gpu_throughput,
# by every command (sweep --emit and report took 1e-7; run refused it after simulating, at
# /training/compute/single_gpu_throughput).
REF = "scenarios/imagenet-resnet50-32gpu.json"
for verb, extra in [("run", ""), ("sweep", " --gpus 8,16 --emit @OUT@"), ("report", " -o @OUT@"), ("compare", "")]:
    case(f"{verb}_reference_compute_tiny", "imagenet-resnet50-32gpu.json", "/reference_compute/single_gpu_throughput",
         f"{verb} {REF}{extra} --set reference_compute.single_gpu_throughput=1e-7")
# A scenario's name is printed: control characters (a newline, an escape sequence) are refused as a
# runs CSV's are (\u001b reaches dtsim as the escape character).
for verb, extra in [("run", ""), ("sweep", " --gpus 1,2")]:
    case(f"{verb}_name_control_char", "seed-4gpu-ddp.json", "/name", f'{verb} {DDP}{extra} --set name="a\\u001bb\\nc"')
# Tensor parallelism on a model without transformer layers (it splits heads and MLPs: a CNN has none).
for kind in ["fsdp", "hybrid"]:
    case(f"set_ddp_{kind}_tp_on_cnn", "seed-4gpu-ddp.json", "/strategy/tensor_parallel",
         f"run {DDP} --set strategy.kind={kind} --set strategy.tensor_parallel=2")
case("set_hybrid_tp_on_cnn", "imagenet-resnet50-32gpu-hybrid.json", "/strategy/tensor_parallel",
     f"run {HYB} --set strategy.tensor_parallel=2")

# sweep --collect of damaged folders
for d in sorted(os.listdir(os.path.join(HERE, "files"))):
    if not d.startswith("collect_"):
        continue
    file, pointer = d + "/manifest.json", "-"
    if d.startswith("collect_result_") and d != "collect_result_missing":
        file = d + "/results/0000.json"
    if d == "collect_result_missing":
        file = d
    pointers = {"collect_id_escape": "/points/0/id", "collect_id_absolute": "/points/0/id", "collect_id_number": "/points/0/id",
                "collect_values_not_object": "/points/0/values", "collect_points_not_array": "/points",
                "collect_varied_number": "/varied/0", "collect_result_gpus_huge": "/gpus",
                "collect_result_gpus_string": "/gpus", "collect_result_time_string": "/iteration_time_s",
                "collect_result_scenario_number": "/scenario", "collect_manifest_unknown_member": "/extra",
                "collect_points_duplicate_id": "/points/1/id", "collect_values_not_varied": "/points/0/values/training.epochs",
                "collect_result_time_negative": "/iteration_time_s", "collect_result_no_members": "/",
                "collect_result_no_time": "/", "collect_result_gpus_zero": "/gpus",
                "collect_result_time_zero": "/iteration_time_s", "collect_result_other_point": "/gpus"}
    case("sweep_" + d, file, pointers.get(d, "-"), f"sweep --collect {F}{d} --csv @OUT@")
case("sweep_collect_missing", "tests/bad_inputs/files/absent", "-", "sweep --collect tests/bad_inputs/files/absent")
case("sweep_collect_file", "README.md", "-", "sweep --collect README.md")

# A held-out style campaign (helper robust4, issue 17): inputs that were accepted or misreported.
case("scenario_duplicate_member", "scenario_duplicate_member.json", "/gpus", f"run {F}scenario_duplicate_member.json")
case("scenario_description_number", "scenario_description_number.json", "/description",
     f"run {F}scenario_description_number.json")
case("set_duplicate_member", "--set cluster.nic", "/gbps", 'run ' + DDP + ' --set cluster.nic={"gbps":100,"gbps":0}')
# (strategy.microbatches above the batch is no longer refused for `pipeline`: torch's Pipe chunks the batch
# with tensor.chunk, B chunks of one sample; cli.run_pipeline_chunks_as_torch.)
for i, v in enumerate(["-1", "0", "nan"]):
    case(f"explain_throughput_{i}", "--throughput", "-", f"explain ddp --gpus 4 --throughput {v}")
case("nccl_tests_factor_inf", "command line", "-", "nccl-tests --topology dgx1-v100 -f inf")
case("nccl_tests_size_2pow64", "command line", "-", "nccl-tests --topology dgx1-v100 -b 8 -e 18446744073709551615")
# Round 2: a tiny hybrid bucket cap built millions of collectives (a hang); an efficiency of 1e-300 ran 1e300 s.
for i, v in enumerate(["0.0001", "1e-300"]):
    case(f"set_hybrid_bucket_cap_tiny_{i}", "imagenet-resnet50-32gpu-hybrid.json", "/strategy/bucket_cap_mb",
         f"run {HYB} --set strategy.bucket_cap_mb={v}")
case("set_compute_efficiency_tiny", "seed-4gpu-ddp.json", "/training/compute/efficiency",
     f"run {DDP} --set training.compute.efficiency=1e-300")
# The roofline compute model: training.compute.model and memory_efficiency (with FLOP-based compute).
EFF = "--set training.compute.efficiency=0.5"  # setting it removes single_gpu_throughput (overrides.cpp)
for i, v in enumerate(["rooftop", "1", "\"Roofline\""]):
    case(f"set_compute_model_bad_{i}", "seed-4gpu-ddp.json", "/training/compute/model",
         f"run {DDP} {EFF} --set training.compute.model={v}")
for i, v in enumerate(["0", "2", "-0.5", "1e-300", "fast"]):
    case(f"set_compute_memory_efficiency_bad_{i}", "seed-4gpu-ddp.json", "/training/compute/memory_efficiency",
         f"run {DDP} {EFF} --set training.compute.model=roofline --set training.compute.memory_efficiency={v}")
case("set_compute_memory_efficiency_without_roofline", "seed-4gpu-ddp.json", "/training/compute/memory_efficiency",
     f"run {DDP} {EFF} --set training.compute.memory_efficiency=0.8")
case("set_compute_memory_efficiency_flops_model", "seed-4gpu-ddp.json", "/training/compute/memory_efficiency",
     f"run {DDP} {EFF} --set training.compute.model=flops --set training.compute.memory_efficiency=0.8")
# Megatron's batch (issue 29): training.micro_batch and global_batch, for every strategy.
MICRO = "--set training.micro_batch"  # setting it removes batch_per_gpu (overrides.cpp)
case("batch_micro_and_per_gpu", "scenario_micro_and_per_gpu.json", "/training/micro_batch",
     f"run {F}scenario_micro_and_per_gpu.json")
case("batch_global_without_micro", "seed-4gpu-ddp.json", "/training/global_batch", f"run {DDP} --set training.global_batch=64")
for i, v in enumerate(["0", "-2", "1.5", "\"8\"", "16777217"]):
    case(f"batch_micro_bad_{i}", "seed-4gpu-ddp.json", "/training/micro_batch", f"run {DDP} {MICRO}={v}")
for i, v in enumerate(["0", "30", "2.5", "true"]):  # 30 is no multiple of 4 x 4 GPUs
    case(f"batch_global_bad_{i}", "seed-4gpu-ddp.json", "/training/global_batch", f"run {DDP} {MICRO}=4 --set training.global_batch={v}")
# a whole number beyond 2^53 spelt with an exponent: refused as too large for that spelling
case("batch_global_exponent_huge", "seed-4gpu-ddp.json", "/training/global_batch",
     f"run {DDP} {MICRO}=4 --set training.global_batch=128e15")
case("batch_global_too_many_steps", "seed-4gpu-ddp.json", "/training/global_batch",
     f"run {DDP} {MICRO}=1 --set training.global_batch=8192")
case("batch_global_vs_accumulation", "seed-4gpu-ddp.json", "/strategy/gradient_accumulation",
     f"run {DDP} {MICRO}=4 --set training.global_batch=32 --set strategy.gradient_accumulation=3")
case("batch_global_vs_microbatches", "imagenet-resnet50-32gpu-hybrid.json", "/strategy/microbatches",
     f"run {HYB} {MICRO}=32 --set training.global_batch=1024")
case("batch_global_hybrid_not_divisible", "imagenet-resnet50-32gpu-hybrid.json", "/training/global_batch",
     f"run {HYB} {MICRO}=32 --set strategy.microbatches=null --set training.global_batch=1000")
case("batch_global_dp_accumulation", "seed-4gpu-dp.json", "/training/global_batch",
     f"run scenarios/seed-4gpu-dp.json {MICRO}=4 --set training.global_batch=32")
# Megatron's layout, split and options (issue 29, items 3-5)
GPT3 = "scenarios/gpt3-175b-h100-128gpu.json"
for i, v in enumerate(["tp-dp", "dp-dp-pp", "TP-DP-PP", "1"]):
    case(f"megatron_rank_order_{i}", "gpt3-175b-h100-128gpu.json", "/strategy/rank_order", f"run {GPT3} --set strategy.rank_order={v}")
case("megatron_degrees_product_beyond_int", "imagenet-resnet50-32gpu-hybrid.json", "/gpus",
     f"run {HYB} --set gpus=1000000 --set strategy.tensor_parallel=1000000 --set strategy.pipeline_stages=1000000")
case("megatron_tp_not_dividing_heads", "gpt3-175b-h100-128gpu.json", "/strategy/tensor_parallel",
     f"run {GPT3} --set strategy.tensor_parallel=64 --set strategy.pipeline_stages=2")
case("megatron_tp_not_dividing_kv_heads", "llama3-70b-h100-64gpu.json", "/strategy/tensor_parallel",
     f"run scenarios/llama3-70b-h100-64gpu.json --set strategy.tensor_parallel=16 --set strategy.pipeline_stages=2")
case("megatron_stages_not_dividing_layers", "gpt3-175b-h100-128gpu.json", "/strategy/pipeline_stages",
     f"run {GPT3} --set strategy.tensor_parallel=1 --set strategy.pipeline_stages=128")
case("megatron_balance_not_adding_up", "gpt3-175b-h100-128gpu.json", "/strategy/balance",
     f"run {GPT3} --set strategy.balance=[12,12,12,12,12,12,12,13]")
case("megatron_balance_empty_stage", "gpt3-175b-h100-128gpu.json", "/strategy/balance/7",
     f"run {GPT3} --set strategy.balance=[12,12,12,12,12,12,24,0]")
# Interleaved 1F1B (strategy.virtual_stages): Megatron's conditions
for i, v in enumerate(["0", "1.5", "\"2\"", "2000"]):
    case(f"megatron_virtual_stages_bad_{i}", "gpt3-175b-h100-128gpu.json", "/strategy/virtual_stages",
         f"run {GPT3} --set strategy.virtual_stages={v}")
case("megatron_virtual_stages_gpipe", "gpt3-175b-h100-128gpu.json", "/strategy/virtual_stages",
     f"run {GPT3} --set strategy.virtual_stages=2 --set strategy.schedule=gpipe")
case("megatron_virtual_stages_microbatches", "gpt3-175b-h100-128gpu.json", "/strategy/virtual_stages",
     f"run {GPT3} --set strategy.virtual_stages=2 --set strategy.microbatches=4")
case("megatron_virtual_stages_layers", "gpt3-175b-h100-128gpu.json", "/strategy/virtual_stages",
     f"run {GPT3} --set strategy.virtual_stages=5")
case("megatron_virtual_stages_balance_count", "gpt3-175b-h100-128gpu.json", "/strategy/balance",
     f"run {GPT3} --set strategy.virtual_stages=2 --set strategy.balance=[12,12,12,12,12,12,12,12]")
case("megatron_virtual_stages_cnn", "imagenet-resnet50-32gpu-hybrid.json", "/strategy/virtual_stages",
     f"run {HYB} --set strategy.virtual_stages=2")
case("megatron_sequence_parallel_string", "gpt3-175b-h100-128gpu.json", "/strategy/sequence_parallel",
     f"run {GPT3} --set strategy.sequence_parallel=yes")
case("megatron_distributed_optimizer_number", "gpt3-175b-h100-128gpu.json", "/strategy/distributed_optimizer",
     f"run {GPT3} --set strategy.distributed_optimizer=1")
case("megatron_tp_backward_overlap_string", "gpt3-175b-h100-128gpu.json", "/strategy/tp_backward_overlap",
     f"run {GPT3} --set strategy.tp_backward_overlap=sometimes")
# Megatron-LM 2021-2022's scatter/gather of the pipeline's sends: a boolean, as its --no-scatter-gather-tensors-in-pipeline.
for i, v in enumerate(["yes", "1", "[true]"]):
    case(f"megatron_scatter_gather_tensors_in_pipeline_{i}", "gpt3-175b-h100-128gpu.json",
         "/strategy/scatter_gather_tensors_in_pipeline", f"run {GPT3} --set strategy.scatter_gather_tensors_in_pipeline={v}")
case("pipeline_scatter_gather_tensors_in_pipeline", "--set strategy.scatter_gather_tensors_in_pipeline",
     "/strategy/scatter_gather_tensors_in_pipeline",
     f"run {PIPE} --set strategy.scatter_gather_tensors_in_pipeline=true")
for i, v in enumerate(["partial", "selective-op", "0"]):
    case(f"megatron_activation_checkpointing_{i}", "gpt3-175b-h100-128gpu.json", "/training/activation_checkpointing",
         f"run {GPT3} --set training.activation_checkpointing={v}")
# Layer-level selective checkpointing (torchtitan's selective_ac_option n): n only with "selective_layer"
# (1 also with "full"), a positive integer of at most a million.
for i, v in enumerate(["0", "-2", "1.5", "x", "2000000", "[2]"]):
    case(f"fsdp_activation_checkpointing_every_{i}", FS, "/training/activation_checkpointing_every",
         f"run {FSDP} --set training.activation_checkpointing=selective_layer --set training.activation_checkpointing_every={v}")
for i, ac in enumerate(["none", "selective", "selective_op", "full"]):
    case(f"fsdp_activation_checkpointing_every_with_{ac}", FS, "/training/activation_checkpointing_every",
         f"run {FSDP} --set training.activation_checkpointing={ac} --set training.activation_checkpointing_every=2")
case("runs_activation_checkpointing_every_zero", "runs_activation_checkpointing_every_zero.csv", "-",
     f"validate {F}runs_activation_checkpointing_every_zero.csv")
case("runs_activation_checkpointing_every_with_full", "runs_activation_checkpointing_every_with_full.csv", "-",
     f"validate {F}runs_activation_checkpointing_every_with_full.csv")
# Round 3 (helper-14, session 22): a default bucket size too small for the model blamed a member the
# scenario does not have; explain's --cluster was named --topology.
ZERO3 = "scenarios/llama2-13b-zero3-a100-16gpu.json"
case("zero_default_bucket_too_small", "llama2-13b-zero3-a100-16gpu.json", "/strategy",
     f"run {ZERO3} --set model.layers=1024 --set model.hidden=20480")
case("explain_cluster_unknown", "--cluster", "-", "explain fsdp --gpus 8 --cluster nosuch")
# An option of another strategy is refused, not ignored.
for name, option, args in [("ddp_stage", "--stage", "explain ddp --gpus 8 --stage 2"),
                           ("ddp_tp", "--tp", "explain ddp --gpus 8 --tp 2"),
                           ("ddp_pp", "--pp", "explain ddp --gpus 8 --pp 2"),
                           ("ddp_microbatches", "--microbatches", "explain ddp --gpus 8 --microbatches 4"),
                           ("fsdp_stage", "--stage", "explain fsdp --gpus 8 --stage 2"),
                           ("zero_tp", "--tp", "explain zero --gpus 8 --tp 2"),
                           ("pipeline_tp", "--tp", "explain pipeline --gpus 2 --tp 2"),
                           ("hybrid_stage", "--stage", "explain hybrid --gpus 8 --stage 1"),
                           ("dp_microbatches", "--microbatches", "explain dp --gpus 4 --microbatches 4")]:
    case("explain_" + name, option, "-", args)

# Helper-17's sweep (session 24).
FSDP8B = "scenarios/llama3-8b-fsdp-h100-64gpu.json"
case("fabric_switch_with_nics_per_leaf", "llama3-8b-fsdp-h100-64gpu.json", "/cluster/fabric/nics_per_leaf",
     f"run {FSDP8B} --set cluster.fabric.kind=switch --set cluster.fabric.nics_per_leaf=4")
case("fabric_switch_with_oversubscription", "llama3-8b-fsdp-h100-64gpu.json", "/cluster/fabric/oversubscription",
     f"run {FSDP8B} --set cluster.fabric.kind=switch --set cluster.fabric.oversubscription=2")
case("megatron_microbatches_not_dividing", "gpt3-175b-h100-128gpu.json", "/strategy/microbatches",
     f"run {GPT3} --set strategy.microbatches=3")
case("megatron_batch_not_divided", "gpt3-175b-h100-128gpu.json", "/strategy/microbatches",
     f"run {GPT3} --set training.batch_per_gpu=65")
for obj, member, value in [("offload_optimizer", "buffer_count", '"x"'), ("offload_optimizer", "nvme_path", "42"),
                           ("offload_optimizer", "fast_init", '"maybe"'), ("offload_optimizer", "pipeline_read", "1"),
                           ("offload_param", "buffer_size", "-1"), ("offload_param", "max_in_cpu", '"x"')]:
    case(f"zero_{obj}_{member}", "llama2-13b-zero3-a100-16gpu.json", f"/strategy/{obj}/{member}",
         f"run {ZERO3} --set strategy.{obj}={{\"device\":\"cpu\",\"{member}\":{value}}}")
# Options that would be ignored without the one they belong to.
case("run_trace_iterations_without_trace", "command line", "-", f"run {DDP} --trace-iterations all")
case("run_gpus_shown_without_html", "command line", "-", f"run {DDP} --gpus-shown 0-3")
case("run_links_shown_without_html", "command line", "-", f"run {DDP} --links-shown 3")
case("sweep_emit_with_csv", "command line", "-", f"sweep {DDP} --gpus 2,4 --emit @OUT@ --csv x.csv")
case("sweep_emit_with_jobs", "command line", "-", f"sweep {DDP} --gpus 2,4 --emit @OUT@ -j 2")
# DeepSpeed's element counts are integers.
for member in ["reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size", "stage3_max_live_parameters"]:
    case(f"zero_{member}_fraction", "llama2-13b-zero3-a100-16gpu.json", f"/strategy/{member}",
         f"run {ZERO3} --set strategy.{member}=1.5")
case("inline_model_layers_over_1024", "inline_llama_ddp.json", "/model/layers",
     "run tests/data/scenarios/inline_llama_ddp.json --set model.layers=1025")
# Round 28: DDP took any bucket_cap_mb (0.001 MB on 100,000 layers: 100,000 buckets, std::bad_alloc), did
# not bound its plan (Llama 3 405B over 128 or 1024 GPUs: over 8 GB), and nccl-tests simulated an
# all_reduce over 32768 GPUs (5 GB, a SimGrid backtrace under a 6 GB cap).
case("set_ddp_bucket_cap_too_many_buckets", "inline_llama_ddp.json", "/strategy/bucket_cap_mb",
     "run tests/data/scenarios/inline_llama_ddp.json --set model.layers=1024 --set strategy.bucket_cap_mb=1e-300")
case("ddp_plan_too_large", "imagenet-resnet50-32gpu.json", "/gpus",
     "run scenarios/imagenet-resnet50-32gpu.json --set model=llama3-405b --set cluster.nodes=128 --set gpus=1024")
case("explain_ddp_plan_too_large", "explain", "/gpus", "explain ddp --gpus 1024 --model llama3-405b")
case("nccl_tests_all_reduce_too_many_gpus", "--nodes", "-", "nccl-tests --topology dgx1-v100 --nodes 4096 -b 1M -e 1M")

with open(os.path.join(HERE, "cases.txt"), "w") as out:
    out.write("# Bad inputs: NAME | FILE the message names | JSON POINTER it names (- none) | dtsim ARGUMENTS\n")
    out.write("# Written by make_cases.py; each must exit 2 with one line on stderr and leave no @OUT@ file.\n")
    for c in cases:
        line = " | ".join(c)
        # CMake's file(STRINGS) list keeps an unbalanced '[' open across the following lines.
        assert line.count("[") == line.count("]"), line
        out.write(line + "\n")
print(len(cases), "cases")
