#!/usr/bin/env python3
"""Writes the bad input files of tests/bad_inputs/files/ from good ones of the repository, each with
one defect. Run from the repository root after changing it; the files are committed (data as data)."""
import copy, json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "bad_inputs", "files")
os.makedirs(OUT, exist_ok=True)

def load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)

def write(name, content):
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(os.path.join(OUT, name), mode) as f:
        f.write(content)

def put(doc, path, value):
    """path: list of keys; value None deletes."""
    d = doc
    for k in path[:-1]:
        d = d[k]
    if value is DELETE:
        del d[path[-1]]
    else:
        d[path[-1]] = value

DELETE = object()

def mutated(base, path, value):
    d = copy.deepcopy(base)
    put(d, path, value)
    return json.dumps(d, indent=1)

# --- topologies (dtsim topology check FILE) ---------------------------------------------------------
topo = load("topologies/pcie-box.json")
topo_cases = {
    "topo_nodes_zero": (["nodes"], 0),
    "topo_nodes_huge": (["nodes"], 100000),
    "topo_nodes_string": (["nodes"], "8"),
    "topo_nodes_fraction": (["nodes"], 1.5),
    "topo_nodes_2pow64": (["nodes"], 18446744073709551615),
    "topo_gpus_zero": (["gpus_per_node"], 0),
    "topo_gpu_unknown": (["gpu"], "H900"),
    "topo_kind_unknown": (["intra_node", "kind"], "ethernet"),
    "topo_pcie_gen_2": (["intra_node", "pcie_gen"], 2),
    "topo_pcie_lanes_3": (["intra_node", "pcie_lanes"], 3),
    "topo_pcie_lanes_huge": (["intra_node", "pcie_lanes"], 4294967312),
    "topo_pcie_latency_negative": (["intra_node", "pcie_latency_us"], -1),
    "topo_pcie_latency_huge": (["intra_node", "pcie_latency_us"], 1e300),
    "topo_cpu_gbytes_zero": (["intra_node", "cpu_interconnect", "gbytes"], 0),
    "topo_cpu_gbytes_huge": (["intra_node", "cpu_interconnect", "gbytes"], 1e300),
    "topo_nic_gbps_zero": (["nic", "gbps"], 0),
    "topo_nic_gbps_huge": (["nic", "gbps"], 1e300),
    "topo_nic_gbps_string": (["nic", "gbps"], "100"),
    "topo_nic_count_negative": (["nic", "count_per_node"], -1),
    "topo_fabric_kind": (["fabric", "kind"], "torus"),
    "topo_unknown_member": (["nic", "speed"], 100),
    "topo_p2p_number": (["intra_node", "p2p"], 1),
    "topo_sockets_huge": (["intra_node", "cpu_sockets"], 2147483648),
    "topo_base_unknown": (["base"], "pcie-box-9000"),
    "topo_missing_gpu": (["gpu"], DELETE),
    # fuzz_topology's timeout: 130017 NICs per node on 8 nodes built 1 M devices (11 s per check)
    "topo_nic_count_huge": (["nic", "count_per_node"], 130017),
    "topo_pcie_switches_huge": (["intra_node", "pcie_switches"], 100000),
    "topo_sockets_many": (["intra_node", "cpu_sockets"], 300),
}
for name, (path, value) in topo_cases.items():
    write(name + ".json", mutated(topo, path, value))
write("topo_not_object.json", "[1, 2, 3]\n")
write("topo_empty.json", "")
write("topo_truncated.json", json.dumps(topo)[:200])
write("topo_1e400.json", json.dumps(topo).replace('"gbps": 100', '"gbps": 1e400'))
write("topo_deep.json", "[" * 100000 + "]" * 100000)
write("topo_bad_utf8.json", b'{"nodes": 1, "gpu": "\xff\xfe"}')
write("topo_nul.json", b'{"nodes": 1\x00}')
# A NUL byte ends nlohmann's input: a whole document before it must not hide what follows.
write("topo_nul_tail.json", json.dumps(topo).encode() + b'\x00{"nodes": 999, garbage ]]]')
# Topology files over a preset ("base"): members of another intra_node.kind (or that only mean
# something beside PCIe switches or a second socket), a contradiction blamed on the user's member
# rather than the preset's, a missing calibration or base file named where the file names it.
topo_layers = {
    "topo_pcie_nvlink_lane_gbytes": {"base": "pcie-box", "intra_node": {"nvlink_lane_gbytes": -5}},
    "topo_mesh_max_gpus": {"base": "dgx1-v100", "intra_node": {"max_gpus": "abc"}},
    "topo_nvswitch_nvlink_pairs": {"base": "hgx-h100", "intra_node": {"nvlink_pairs": [[0, 1, 1]]}},
    "topo_gpus_per_switch_without_switches": {"base": "pcie-box", "intra_node": {"gpus_per_pcie_switch": "y"}},
    "topo_interconnect_one_socket": {"base": "pcie-box",
                                     "intra_node": {"cpu_sockets": 1, "cpu_interconnect": {"gbytes": -1}}},
    "topo_mesh_pairs_fewer_gpus": {"base": "dgx1-v100", "intra_node": {"nvlink_pairs": [[0, 1, 1]]}},
    "topo_nvswitch_max_gpus_below_node": {"base": "hgx-h100", "intra_node": {"max_gpus": 4}},
    "topo_calibration_missing": {"base": "dgx-a100", "calibration": "absent_calibration.json"},
    "topo_calibration_number": {"base": "dgx-a100", "calibration": 5},
    "topo_base_file_missing": {"base": "absent_base.json"},
}
for name, doc in topo_layers.items():
    write(name + ".json", json.dumps(doc) + "\n")

# --- models (dtsim run SCENARIO --set model=FILE) --------------------------------------------------
model = load("models/toymodel.json")
model_cases = {
    "model_layers_empty": (["layers"], []),
    "model_param_negative": (["layers", 0, "params", 0], -1),
    "model_param_int64max": (["layers", 0, "params", 0], 9223372036854775807),
    "model_param_uint64max": (["layers", 0, "params", 0], 18446744073709551615),
    "model_param_fraction": (["layers", 0, "params", 0], 1.5),
    "model_flops_huge": (["layers", 0, "fwd_flops"], 1e300),
    "model_flops_negative": (["layers", 0, "fwd_flops"], -1),
    "model_activation_zero": (["layers", 0, "activation_elems"], 0),
    "model_kind_unknown": (["layers", 0, "kind"], "quantum"),
    "model_layer_not_object": (["layers", 0], 7),
    "model_name_missing": (["layers", 0, "name"], DELETE),
    "model_unknown_member": (["layers", 0, "weights"], 3),
    "model_input_zero": (["input_elems"], 0),
    "model_arch_string": (["arch", "hidden"], "ten"),
    "model_name_empty": (["name"], ""),
    "model_layers_object": (["layers"], {"a": 1}),
    "model_buffer_negative": (["layers", 0, "buffer_elems"], -4),
    "model_then_unknown_op": (["layers", 0, "then"], ["softmax"]),
    "model_then_not_list": (["layers", 0, "then"], "relu_"),
    "model_input_later_layer": (["layers", 0, "input"], "net2"),
    "model_input_unknown_layer": (["layers", 2, "input"], "net9"),
    "model_pool_op_unknown": (["layers", 1, "op"], "median"),
    "model_rms_op_on_linear": (["layers", 0, "op"], "rms"),
}
for name, (path, value) in model_cases.items():
    write(name + ".json", mutated(model, path, value))
dup = copy.deepcopy(model); dup["layers"][1]["name"] = "net1"
write("model_duplicate_layer.json", json.dumps(dup, indent=1))
write("model_syntax.json", json.dumps(model)[:-3])

# --- calibration files (dtsim run SCENARIO --set cluster.calibration=FILE) --------------------------
cal = load("tests/data/calibration/cal_dgx1_v100.json")
cal_cases = {
    "cal_version_2": (["dtsim_calibration"], 2),
    "cal_version_missing": (["dtsim_calibration"], DELETE),
    "cal_ll_rate_zero": (["nccl", "ll_rate_scale"], 0),
    "cal_ll128_rate_string": (["nccl", "ll128_rate_scale"], "fast"),
    "cal_efficiency_string": (["nccl", "nvlink_efficiency"], "high"),
    "cal_efficiency_two": (["nccl", "pcie_efficiency"], 2),
    "cal_efficiency_zero": (["nccl", "network_efficiency"], 0),
    "cal_launch_negative": (["nccl", "launch_overhead_us"], -1),
    "cal_launch_array": (["nccl", "launch_overhead_us"], [1]),
    "cal_hop_scale_huge": (["nccl", "hop_latency_scale"], 1e9),
    "cal_class_unknown": (["nccl", "hop_latency_scale_by_class"], {"Bogus/LL": 1}),
    "cal_class_negative": (["nccl", "hop_latency_scale_by_class"], {"Ring/LL": -1}),
    "cal_class_not_object": (["nccl", "hop_latency_scale_by_class"], 3),
    "cal_proto_unknown": (["nccl", "net_hop_latency_scale_by_protocol"], {"LL256": 1}),
    "cal_nccl_unknown": (["nccl", "magic"], 1),
    "cal_link_class_unknown": (["links", "infiniband"], {"bandwidth_GBps": 1}),
    "cal_pcie_bw_zero": (["links", "pcie", "bandwidth_GBps"], 0),
    "cal_pageable_h2d_zero": (["host_device", "h2d_pageable_GBps"], 0),
    "cal_pageable_d2h_huge": (["host_device", "d2h_pageable_GBps"], 1e6),
    "cal_nvlink_bw_string": (["links", "nvlink", "bandwidth_GBps_per_lane"], "24"),
    "cal_nvlink_total": (["links", "nvlink", "bandwidth_GBps"], 24),
    "cal_section_unknown": (["extra"], {}),
    "cal_compute_batch_zero": (["compute"], {"model": {"name": "resnet50", "batch": 0}, "layers": []}),
    "cal_compute_fwd_negative": (["compute"], {"model": {"name": "resnet50", "batch": 8},
                                               "layers": [{"name": "conv1", "fwd_s": -1, "bwd_s": 0}]}),
}
for name, (path, value) in cal_cases.items():
    write(name + ".json", mutated(cal, path, value))
write("cal_not_object.json", "\"calibration\"\n")

# --- compute profiles (dtsim run SCENARIO --set training.compute.profile=FILE) ---------------------
prof = load("tests/data/calibration/compute/profile_toymodel_sample.json")
prof_cases = {
    "profile_batch_zero": (["model", "batch"], 0),
    "profile_batch_2pow32": (["model", "batch"], 4294967296),
    "profile_batch_string": (["model", "batch"], "20"),
    "profile_fwd_negative": (["model", "layers", 0, "fwd_s"], -1e-5),
    "profile_bwd_string": (["model", "layers", 0, "bwd_s"], "fast"),
    "profile_bwd_huge": (["model", "layers", 0, "bwd_s"], 1e300),
    "profile_layers_object": (["model", "layers"], {}),
    "profile_layer_name_number": (["model", "layers", 1, "name"], 5),
    "profile_model_missing": (["model"], DELETE),
    "profile_optimizer_negative": (["model", "optimizer_s"], -1),
}
for name, (path, value) in prof_cases.items():
    write(name + ".json", mutated(prof, path, value))
d = copy.deepcopy(prof); d["model"]["layers"][2]["name"] = "net1"
write("profile_duplicate_layer.json", json.dumps(d, indent=1))

# --- nccl-tests logs (dtsim validate LOG --topology dgx1-v100) -------------------------------------
with open(os.path.join(ROOT, "tests/data/validation/nccl/8xV100_SXM2_16GB_hybridcubemesh_allreduce.txt")) as f:
    log = f.read().splitlines()
header = [l for l in log if l.startswith("#")]
rows = [l for l in log if l.strip() and not l.startswith("#")]
row = "        1024           256   float     sum    48.88    0.02    0.04  2e-07    48.83    0.02    0.04  2e-07"
def log_with(extra_rows):
    return "\n".join(header + extra_rows) + "\n"
write("nccl_no_rows.txt", log_with([]))
write("nccl_size_overflow.txt", log_with([row.replace("        1024", "99999999999999999999")]))
write("nccl_count_overflow.txt", log_with([row.replace("256   float", "184467440737095516160   float")]))
write("nccl_time_nan.txt", log_with([row.replace("48.88", "nan")]))
write("nccl_time_inf.txt", log_with([row.replace("48.88", "inf")]))
write("nccl_time_negative.txt", log_with([row.replace("48.88", "-48.88")]))
write("nccl_time_zero.txt", log_with([row.replace("48.88", "0")]))
write("nccl_busbw_text.txt", log_with([row.replace("0.04  2e-07    48.83", "abc  2e-07    48.83")]))
write("nccl_algbw_negative.txt", log_with([row.replace("48.88    0.02", "48.88    -0.02")]))
write("nccl_short_row.txt", log_with([row.rsplit(None, 3)[0] + "  1 2 3 4"] ).replace("1 2 3 4", "") )
write("nccl_huge_time.txt", log_with([row.replace("48.88", "1e400")]))
write("nccl_many_rows.txt", log_with([row] * 5000))
write("nccl_nthread_huge.txt", "# nThread 4294967296 nGpus 8 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n" + log_with([row]))
write("nccl_root_text.txt", "\n".join(header[:-3] + [
    "#       size         count    type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "        1024           256   float     sum      x1    48.88    0.02    0.04      0    48.83    0.02    0.04      0"]) + "\n")
write("nccl_root_huge.txt", "\n".join(header[:-3] + [
    "#       size         count    type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "        1024           256   float     sum 99999999999    48.88    0.02    0.04      0    48.83    0.02    0.04      0"]) + "\n")
write("nccl_row_cut.txt", log_with([row, "        2048           512   float"]))  # a row cut short after a good one
write("nccl_row_cut_time.txt", log_with([row, "   268435456      67108864   float     sum    35"]))
write("nccl_size_negative.txt", log_with([row, row.replace("        1024", "       -1024")]))
write("nccl_time_1e308.txt", log_with([row.replace("48.88", "1e308").replace("48.83", "1e308")]))
write("nccl_time_denormal.txt", log_with([row.replace("48.88", "1e-320")]))
write("nccl_garbage.txt", "this is not an nccl-tests log\nnor anything else\n")
write("nccl_binary.txt", bytes(range(256)) * 4)

# --- bandwidth logs (dtsim calibrate LOG --topology dgx1-v100 -o OUT) ------------------------------
bench = {"tool": "dtsim-bench-link", "machine": {"gpus": [{"name": "V100"}]},
         "host_device": [{"gpu": 0, "h2d_pinned_GBps": 12.0}]}
def bench_with(**kw):
    d = copy.deepcopy(bench)
    d["host_device"][0].update(kw)
    return json.dumps(d, indent=1)
write("bw_bench_gpu_negative.json", bench_with(gpu=-1))
write("bw_bench_gpu_huge.json", bench_with(gpu=4e9))
write("bw_bench_gpu_fraction.json", bench_with(gpu=1.5))
write("bw_bench_gpu_uint64.json", bench_with(gpu=18446744073709551615))
write("bw_bench_value_negative.json", bench_with(h2d_pinned_GBps=-12))
write("bw_bench_value_string.json", bench_with(h2d_pinned_GBps="12"))
write("bw_bench_value_1e400.json", bench_with(h2d_pinned_GBps=12).replace("12", "1e400"))
d = copy.deepcopy(bench); d["p2p"] = {"unidirectional_p2p_GBps": [[0, 1], [1]]}
write("bw_bench_matrix_ragged.json", json.dumps(d))
d = copy.deepcopy(bench); d["p2p"] = {"unidirectional_p2p_GBps": [[0, -1], [1, 0]]}
write("bw_bench_matrix_negative.json", json.dumps(d))
d = copy.deepcopy(bench); d["tool"] = "other"
write("bw_bench_wrong_tool.json", json.dumps(d))
write("bw_bench_truncated.json", json.dumps(bench)[:40])
write("bw_bandwidthtest_device_huge.txt",
      "[CUDA Bandwidth Test] - Starting...\n Device 99999999999: Tesla V100\n Host to Device Bandwidth, 1 Device(s)\n"
      " PINNED Memory Transfers\n   Transfer Size (Bytes)\tBandwidth(GB/s)\n   32000000\t\t\t12.1\n")
write("bw_bandwidthtest_device_2pow32.txt",
      "[CUDA Bandwidth Test] - Starting...\n Device 4294967296: Tesla V100\n Host to Device Bandwidth, 1 Device(s)\n"
      " PINNED Memory Transfers\n   Transfer Size (Bytes)\tBandwidth(GB/s)\n   32000000\t\t\t12.1\n")
write("bw_gpuinspector_max_text.txt",
      "julia> host2device_bandwidth()\nHost <-> Device Bandwidth (GiB/s):\n └ max: 4.4.6e\n")
write("bw_gpuinspector_matrix_huge.txt",
      "julia> p2p_bandwidth_all()\n99999999999999999999_99999999999999999999 Matrix{Union{Nothing, Float64}}:\n nothing 1\n")
write("bw_gpuinspector_matrix_nonsquare.txt",
      "julia> p2p_bandwidth_all()\n2_3 Matrix{Union{Nothing, Float64}}:\n nothing 1 2\n 1 nothing 2\n")
write("bw_gpuinspector_matrix_text.txt",
      "julia> p2p_bandwidth_all()\n2_2 Matrix{Union{Nothing, Float64}}:\n nothing fast\n 1 nothing\n")
write("bw_p2p_device_huge.txt",
      "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nDevice: 4294967296, Tesla V100, pciBusID: 6, pciDeviceID: 0, pciDomainID:0\n")
write("bw_p2p_matrix_text.txt",
      "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
      "   D\\D     0      1\n     0 750.0  x\n     1  48.0 750.0\n")
write("bw_csv_value_text.csv", "gpu,h2d_pinned_GBps\nA100,fast\n")
write("bw_csv_value_negative.csv", "gpu,h2d_pinned_GBps\nA100,-3\n")
write("bw_csv_ragged.csv", "gpu,h2d_pinned_GBps\nA100,3,4\n")
write("bw_empty.txt", "")

# --- topology host (dtsim topology check FILE) -----------------------------------------------------
for name, (path, value) in {
    "topo_host_cores_zero": (["host", "cores"], 0),
    "topo_host_cores_negative": (["host", "cores"], -8),
    "topo_host_cores_fraction": (["host", "cores"], 7.5),
    "topo_host_cores_string": (["host", "cores"], "64"),
    "topo_host_cores_huge": (["host", "cores"], 100000),
    "topo_host_cores_2pow32": (["host", "cores"], 4294967296),
    "topo_host_threads_zero": (["host", "threads_per_core"], 0),
    "topo_host_threads_nine": (["host", "threads_per_core"], 9),
    "topo_host_cpu_number": (["host", "cpu"], 7),
    "topo_host_unknown_member": (["host", "sockets"], 2),
    "topo_host_not_object": (["host"], 64),
}.items():
    write(name + ".json", mutated(topo, path, value))
d = copy.deepcopy(topo); d["host"] = {"threads_per_core": 2}
write("topo_host_threads_without_cores.json", json.dumps(d, indent=1))

# --- measured training runs (dtsim validate RUNS.csv) ----------------------------------------------
with open(os.path.join(ROOT, "tests/data/training/runs.csv")) as f:
    runs_lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
runs_header = runs_lines[0].split(",")
# Two rows on presets (no topology file beside the CSV): a 1-GPU baseline and an 8-GPU run of it.
RUN_BASE = dict(zip(runs_header, ["base", "", "dgx1-v100", "", "", "1", "1", "resnet50", "fp32", "64", "single", "4",
                                  "imagenet-jpeg", "throughput=360", "360", "samples/s", "test"]))
RUN_8 = dict(RUN_BASE, id="eight", baseline="base", gpus="8", strategy="ddp", measured="2600")
def runs_csv(rows, header=runs_header):
    out = [",".join(header)]
    for r in rows:
        out.append(",".join(r.get(c, "") for c in header))
    return "\n".join(out) + "\n"
def runs_with(**kw):
    return runs_csv([RUN_BASE, dict(RUN_8, **kw)])
runs_cases = {
    "runs_measured_nan": dict(measured="nan"), "runs_measured_negative": dict(measured="-2600"),
    "runs_measured_zero": dict(measured="0"), "runs_measured_text": dict(measured="fast"),
    "runs_measured_1e400": dict(measured="1e400"), "runs_measured_inf": dict(measured="inf"),
    "runs_measured_comma": dict(measured='"2,600"'), "runs_measured_hex": dict(measured="0x10"),
    "runs_nodes_zero": dict(nodes="0"), "runs_nodes_fraction": dict(nodes="1.5"), "runs_nodes_huge": dict(nodes="100000"),
    "runs_nodes_2pow32": dict(nodes="4294967297"), "runs_gpus_text": dict(gpus="eight"), "runs_gpus_zero": dict(gpus="0"),
    "runs_gpus_too_many": dict(gpus="9"), "runs_gpus_exponent": dict(gpus="8e0"),
    "runs_batch_zero": dict(batch_per_gpu="0"), "runs_batch_2pow31": dict(batch_per_gpu="2147483648"),
    "runs_batch_negative": dict(batch_per_gpu="-64"),
    "runs_cluster_unknown": dict(cluster="dgx9-z100"), "runs_cluster_empty": dict(cluster=""),
    "runs_cluster_escape": dict(cluster="../../../topologies/pcie-box.json"),
    "runs_cluster_absolute": dict(cluster="/etc/dtsim-topology.json"), "runs_cluster_missing_file": dict(cluster="absent.json"),
    "runs_model_unknown": dict(model="resnet5000"), "runs_model_escape": dict(model="../../../models/resnet50.json"),
    "runs_model_empty": dict(model=""), "runs_precision_unknown": dict(precision="fp7"), "runs_precision_empty": dict(precision=""),
    "runs_strategy_unknown": dict(strategy="horovod"), "runs_strategy_empty": dict(strategy=""),
    "runs_unit_unknown": dict(unit="images/s"), "runs_unit_empty": dict(unit=""),
    "runs_compute_kind_unknown": dict(compute="speed=3"), "runs_compute_no_equals": dict(compute="360"),
    "runs_compute_throughput_text": dict(compute="throughput=fast"), "runs_compute_throughput_zero": dict(compute="throughput=0"),
    "runs_compute_step_time_huge": dict(compute="step_time=1e9"), "runs_compute_efficiency_two": dict(compute="efficiency=2", gpu="V100-SXM2-16GB"),
    "runs_compute_efficiency_no_gpu": dict(compute="efficiency=0.5"),
    "runs_gpu_unknown": dict(gpu="H900"), "runs_host_cores_zero": dict(host_cores="0"),
    "runs_host_cores_huge": dict(host_cores="5000"), "runs_host_cores_one": dict(host_cores="1"), "runs_host_cores_text": dict(host_cores="many"),
    "runs_workers_negative": dict(loader_workers="-1"), "runs_workers_huge": dict(loader_workers="5000"),
    "runs_workers_fraction": dict(loader_workers="2.5"), "runs_dataset_unknown": dict(dataset="imagenet-png"),
    "runs_baseline_unknown": dict(baseline="nobody"), "runs_baseline_self": dict(baseline="eight"),
    "runs_id_duplicate": dict(id="base"), "runs_id_empty": dict(id=""),
    "runs_zero_no_stage": dict(strategy="zero"),
}
for name, kw in runs_cases.items():
    write(name + ".csv", runs_with(**kw))
write("runs_baseline_later.csv", runs_csv([dict(RUN_8), dict(RUN_BASE)]))
write("runs_missing_measured_column.csv", runs_csv([RUN_BASE, RUN_8], [c for c in runs_header if c != "measured"]))
write("runs_missing_id_column.csv", runs_csv([RUN_BASE, RUN_8], [c for c in runs_header if c != "id"]))
write("runs_unknown_column.csv", runs_csv([RUN_BASE, RUN_8], runs_header + ["notes"]))
write("runs_duplicate_column.csv", runs_csv([RUN_BASE, RUN_8], runs_header + ["gpus"]))
write("runs_short_row.csv", runs_csv([RUN_BASE, RUN_8]).rstrip("\n").rsplit(",", 2)[0] + "\n")
write("runs_long_row.csv", runs_csv([RUN_BASE, RUN_8]).rstrip("\n") + ",extra\n")
write("runs_unclosed_quote.csv", runs_csv([RUN_BASE, dict(RUN_8, source='"NVIDIA, 2021')]))
write("runs_header_only.csv", ",".join(runs_header) + "\n")
write("runs_reserved_below_allocated.csv", runs_csv([RUN_BASE, dict(RUN_8, peak_allocated_gib="50", peak_reserved_gib="10")],
                                                   runs_header + ["peak_allocated_gib", "peak_reserved_gib"]))
write("runs_empty.csv", "")
write("runs_comments_only.csv", "# nothing measured\n")
write("runs_binary.csv", bytes(range(256)) * 4)
write("runs_bad_utf8_id.csv", runs_with(id="ab").encode().replace(b"ab", b"a\xff\xfeb"))
write("runs_control_char_id.csv", runs_with(id="a\x1bb"))
write("runs_bom_every_line.csv", "".join("\ufeff" + line for line in runs_csv([RUN_BASE, RUN_8]).splitlines(True)))
write("runs_too_many_rows.csv", runs_csv([RUN_BASE] + [dict(RUN_8, id=f"r{i}") for i in range(1000)]))
write("runs_many_commas.csv", "," * 100000 + "\n")
write("runs_semicolons.csv", runs_csv([RUN_BASE, RUN_8]).replace(",", ";"))
# The Megatron-LM columns (micro_batch, global_batch, hybrid's options): a GPT-2 on 4 GPUs, tp 2 x pp 2,
# as the first row (predicted first: a value the plan checks fails before anything is simulated).
MEG_HEADER = runs_header + ["tensor_parallel", "pipeline_stages", "micro_batch", "global_batch", "schedule",
                            "activation_checkpointing", "sequence_parallel", "distributed_optimizer"]
MEG_BASE = dict(RUN_BASE, cluster="dgx-a100", gpu="A100-SXM4-80GB", gpus="4", model="gpt2", precision="fp16",
                batch_per_gpu="", strategy="hybrid", loader_workers="", dataset="", compute="efficiency=0.5",
                measured="1.5", unit="s", tensor_parallel="2", pipeline_stages="2", micro_batch="1",
                global_batch="8", schedule="1f1b", activation_checkpointing="selective", sequence_parallel="true",
                distributed_optimizer="false")
MEG_8 = dict(MEG_BASE, id="eight", baseline="base", gpus="8", global_batch="16")
def megatron_with(**kw):
    return runs_csv([dict(MEG_BASE, **kw), MEG_8], MEG_HEADER)
for name, kw in {
    "runs_megatron_micro_batch_zero": dict(micro_batch="0"), "runs_megatron_micro_batch_text": dict(micro_batch="one"),
    "runs_megatron_micro_batch_2pow31": dict(micro_batch="2147483648"),
    "runs_megatron_global_batch_zero": dict(global_batch="0"), "runs_megatron_global_batch_fraction": dict(global_batch="7.5"),
    "runs_megatron_global_batch_huge": dict(global_batch="4294967297"),
    "runs_megatron_global_batch_not_multiple": dict(micro_batch="3"),
    "runs_megatron_global_batch_without_micro": dict(micro_batch=""),
    "runs_megatron_batch_per_gpu_beside_micro": dict(batch_per_gpu="4"),
    "runs_megatron_tensor_parallel_zero": dict(tensor_parallel="0"),
    "runs_megatron_tensor_parallel_text": dict(tensor_parallel="two"),
    "runs_megatron_tensor_parallel_not_dividing_gpus": dict(tensor_parallel="3"),
    "runs_megatron_pipeline_stages_negative": dict(pipeline_stages="-2"),
    "runs_megatron_pipeline_stages_not_dividing_layers": dict(tensor_parallel="1", pipeline_stages="5", gpus="5"),
    "runs_megatron_schedule_unknown": dict(schedule="interleaved"),
    "runs_megatron_checkpointing_unknown": dict(activation_checkpointing="some"),
    "runs_megatron_sequence_parallel_yes": dict(sequence_parallel="yes"),
    "runs_megatron_distributed_optimizer_one": dict(distributed_optimizer="1"),
    "runs_megatron_tensor_parallel_for_ddp": dict(strategy="ddp", pipeline_stages="", schedule="",
                                                  sequence_parallel="", distributed_optimizer=""),
    "runs_megatron_sequence_parallel_for_pipeline": dict(strategy="pipeline", tensor_parallel="", pipeline_stages=""),
    "runs_megatron_schedule_for_ddp": dict(strategy="ddp", tensor_parallel="", pipeline_stages="",
                                           sequence_parallel="", distributed_optimizer=""),
}.items():
    write(name + ".csv", megatron_with(**kw))
# Interleaved 1F1B (virtual_stages): a bad count, and the column for a strategy without it.
MEG_V_HEADER = MEG_HEADER + ["virtual_stages"]
write("runs_megatron_virtual_stages_zero.csv", runs_csv([dict(MEG_BASE, virtual_stages="0"), dict(MEG_8, virtual_stages="")], MEG_V_HEADER))
write("runs_megatron_virtual_stages_for_ddp.csv",
      runs_csv([dict(MEG_BASE, strategy="ddp", tensor_parallel="", pipeline_stages="", schedule="", sequence_parallel="",
                     distributed_optimizer="", virtual_stages="2"), dict(MEG_8, virtual_stages="")], MEG_V_HEADER))
# A time with a global batch (samples/s) against a time without (the same work as its baseline's).
write("runs_megatron_baseline_without_global_batch.csv",
      runs_csv([dict(MEG_BASE, global_batch="", micro_batch="2"), MEG_8], MEG_HEADER))
# The roofline compute model (training.compute.model) and the attention kernel it times, as columns.
MEG_R_HEADER = MEG_HEADER + ["compute_model", "attention"]
for name, kw in {
    "runs_megatron_compute_model_unknown": dict(compute_model="rooftop"),
    "runs_megatron_compute_model_beside_throughput": dict(compute="throughput=100", compute_model="roofline"),
    "runs_megatron_attention_unknown": dict(compute_model="roofline", attention="flash9"),
}.items():
    write(name + ".csv", runs_csv([dict(MEG_BASE, **kw), MEG_8], MEG_R_HEADER))
# Helper-17 (session 24): a time per iteration without its global batch against a rate of samples; an
# optimizer cell, and a strategy_options member that has a column of its own, named by their column.
write("runs_unit_time_against_rate.csv", runs_with(unit="s", measured="0.1"))
write("runs_optimizer_unknown.csv", runs_csv([RUN_BASE, dict(RUN_8, optimizer="adamx")], runs_header + ["optimizer"]))
write("runs_strategy_options_tensor_parallel_zero.csv",
      runs_csv([RUN_BASE, dict(RUN_8, strategy="fsdp", strategy_options='"{""tensor_parallel"": 0}"')],
               runs_header + ["strategy_options"]))
# Without micro_batch, batch_per_gpu stays required.
write("runs_megatron_no_batch.csv", megatron_with(micro_batch="", global_batch=""))
write("runs_megatron_no_batch_column.csv",
      runs_csv([dict(MEG_BASE, batch_per_gpu="4"), dict(MEG_8, batch_per_gpu="4")],
               [c for c in MEG_HEADER if c not in ("batch_per_gpu", "micro_batch")]))

# --- sweep --collect folders (dtsim sweep --collect DIR) -------------------------------------------
RESULT = {"scenario": "seed-4gpu-ddp", "strategy": "ddp", "topology": "pcie-box", "gpus": 4, "nodes_used": 1,
          "iteration_time_s": 0.8, "compute_time_s": 0.7, "comm_time_s": 0.2, "exposed_comm_time_s": 0.1,
          "throughput_samples_per_s": 320.0, "speedup_vs_1gpu": 3.5, "scaling_efficiency": 0.87,
          "epoch_time_s": 4000.0, "total_time_days": 4.6, "ideal_linear_total_days": 4.0}
def collect_dir(name, manifest=None, results=None):
    """manifest: a dict or raw text (None: no manifest); results: {id: dict or raw text}."""
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "results"), exist_ok=True)
    if manifest is not None:
        with open(os.path.join(d, "manifest.json"), "w") as f:
            f.write(manifest if isinstance(manifest, str) else json.dumps(manifest, indent=1))
    for rid, content in (results or {}).items():
        with open(os.path.join(d, "results", rid + ".json"), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content, indent=1))
    with open(os.path.join(d, "results", ".keep"), "w") as f:
        f.write("")
MANIFEST = {"scenario": "scenarios/seed-4gpu-ddp.json", "varied": ["gpus"],
            "points": [{"id": "0000", "values": {"gpus": 4}}]}
def manifest_with(**kw):
    m = copy.deepcopy(MANIFEST); m.update(kw); return m
collect_dir("collect_no_manifest")
collect_dir("collect_manifest_truncated", json.dumps(MANIFEST)[:30])
collect_dir("collect_manifest_array", "[]")
collect_dir("collect_manifest_unknown_member", manifest_with(extra=1), {"0000": RESULT})
collect_dir("collect_points_not_array", manifest_with(points={"0000": {}}))
collect_dir("collect_varied_number", manifest_with(varied=[3]), {"0000": RESULT})
collect_dir("collect_id_escape", manifest_with(points=[{"id": "../../../../README", "values": {"gpus": 4}}]))
collect_dir("collect_id_number", manifest_with(points=[{"id": 0, "values": {"gpus": 4}}]))
collect_dir("collect_id_absolute", manifest_with(points=[{"id": "/etc/hostname", "values": {"gpus": 4}}]))
collect_dir("collect_values_not_object", manifest_with(points=[{"id": "0000", "values": 4}]), {"0000": RESULT})
collect_dir("collect_result_missing", MANIFEST)
collect_dir("collect_result_truncated", MANIFEST, {"0000": json.dumps(RESULT)[:50]})
collect_dir("collect_result_array", MANIFEST, {"0000": "[1, 2]"})
collect_dir("collect_result_empty", MANIFEST, {"0000": ""})
collect_dir("collect_result_gpus_huge", MANIFEST, {"0000": dict(RESULT, gpus=1e30)})
collect_dir("collect_result_gpus_string", MANIFEST, {"0000": dict(RESULT, gpus="4")})
collect_dir("collect_result_time_string", MANIFEST, {"0000": dict(RESULT, iteration_time_s="0.8")})
collect_dir("collect_result_scenario_number", MANIFEST, {"0000": dict(RESULT, scenario=5)})
collect_dir("collect_result_1e400", MANIFEST, {"0000": json.dumps(RESULT).replace("320.0", "1e400")})
# --- a held-out style campaign (helper robust4, issue 17): inputs that were accepted or misreported ---
# Bandwidth logs: values out of range were blamed on "calibration being written"; broken matrices,
# duplicate CSV columns and labels nvidia-smi never prints were taken.
NVB = "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n           0         1\n 0       N/A     26.34\n 1     26.34       N/A\n"
BWT = ("[CUDA Bandwidth Test] - Starting...\n Device 0: Tesla V100\n Host to Device Bandwidth, 1 Device(s)\n"
       " PINNED Memory Transfers\n   Transfer Size (Bytes)\tBandwidth(GB/s)\n   32000000\t\t\t12.1\n")
P2P = ("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
       "   D\\D     0      1\n     0 750.0  48.0\n     1  48.0 750.0\n")
SMI = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2\t0-19\nGPU1\tNV2\t X \t0-19\n"
write("bw_nvbandwidth_negative.txt", NVB.replace("26.34", "-26.34"))
write("bw_nvbandwidth_huge.txt", NVB.replace("26.34", "1e300"))
write("bw_nvbandwidth_zero.txt", NVB.replace("26.34", "0.00"))  # fits a zero rate: the log is to blame
write("bw_nvbandwidth_nonsquare.txt", "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n           0         1         2\n"
      " 0       N/A     26.34     3\n 1     26.34       N/A     3\n")
write("bw_nvbandwidth_ragged.txt", NVB.replace(" 1     26.34       N/A", " 1     26.34"))
write("bw_nvbandwidth_all_na.txt", NVB.replace("26.34", "N/A"))
write("bw_bandwidthtest_negative.txt", BWT.replace("12.1", "-12.1"))
write("bw_bandwidthtest_zero.txt", BWT.replace("12.1", "0"))
write("bw_bandwidthtest_mbs_huge.txt", BWT.replace("Bandwidth(GB/s)", "Bandwidth(MB/s)").replace("12.1", "1e308"))
write("bw_bandwidthtest_size_zero.txt", BWT.replace("32000000", "0"))
write("bw_p2p_negative.txt", P2P.replace("48.0", "-48.0"))
write("bw_p2p_nonsquare.txt", P2P.replace("     1  48.0 750.0\n", ""))
write("bw_p2p_wide.txt", "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
      "   D\\D " + " ".join(str(i) for i in range(2000)) + "\n" + "".join(f" {i} " + " 1.0" * 2000 + "\n" for i in range(3)))
write("bw_p2p_latency_negative.txt", "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nP2P=Enabled Latency (P2P Writes) Matrix (us)\n"
      "   GPU     0      1\n     0   1.5  -2.0\n     1   2.0   1.5\n")
write("bw_gpuinspector_max_huge.txt", "julia> host2device_bandwidth()\nHost <-> Device Bandwidth (GiB/s):\n └ max: 1e300\n")
write("bw_gpuinspector_matrix_short.txt", "julia> p2p_bandwidth_all()\n3_3 Matrix{Union{Nothing, Float64}}:\n nothing 1 2\n 1 nothing 2\n")
write("bw_gpuinspector_matrix_negative.txt", "julia> p2p_bandwidth_all()\n2_2 Matrix{Union{Nothing, Float64}}:\n nothing -1\n 1 nothing\n")
write("bw_smi_unknown_link.txt", SMI.replace("NV2", "XYZ"))
write("bw_smi_nvlinks_huge.txt", SMI.replace("NV2", "NV99999999999"))
write("bw_csv_value_huge.csv", "gpu,h2d_pinned_GBps\n0,1e300\n")
write("bw_csv_duplicate_column.csv", "gpu,h2d_pinned_GBps,h2d_pinned_GBps\n0,3,4\n")
d = copy.deepcopy(bench); d["p2p"] = [1]
write("bw_bench_p2p_array.json", json.dumps(d))
# nccl-tests logs: rank lines, header counts, data types and test names that do not fit
with open(os.path.join(ROOT, "tests/data/nccl/a100/a100_1n_galvatron_fixture.txt")) as f:
    glines = f.read().splitlines()
ghead = [l for l in glines if l.startswith("#")]
grows = [l for l in glines if l.strip() and not l.startswith("#")]
def galvatron(head=None, rows=None):
    return "\n".join((ghead if head is None else head) + (grows if rows is None else rows)) + "\n"
write("nccl_rank_device_huge.txt", galvatron(head=[l.replace("device  3 [", "device 99999 [") for l in ghead]))
write("nccl_rank_device_twice.txt", galvatron(head=[l.replace("device  3 [", "device  2 [") for l in ghead]))
write("nccl_ngpus_zero.txt", galvatron(head=[l.replace("nGpus 8", "nGpus 0") for l in ghead]))
write("nccl_nthread_zero.txt", galvatron(head=[l.replace("nThread 1", "nThread 0") for l in ghead]))
write("nccl_header_more_ranks.txt", galvatron(head=[l.replace("nGpus 8", "nGpus 16") for l in ghead]))
write("nccl_type_unknown.txt", galvatron(rows=[r.replace("float", "float33") for r in grows]))
write("nccl_redop_unknown.txt", galvatron(rows=[r.replace(" sum ", " summ ") for r in grows]))
write("nccl_test_unknown.txt", "# Collective test starting: frobnicate_perf\n" + galvatron())
write("nccl_busbw_huge.txt", galvatron(rows=[grows[0].replace(grows[0].split()[7], "1e300", 1)] + grows[1:]))
# Topologies, scenarios, calibration files: a member given twice (nlohmann kept the last), prose of the wrong type
write("topo_duplicate_member.json", json.dumps(topo, indent=1).replace('"nodes": 1', '"nodes": 1, "nodes": 2', 1))
write("topo_description_number.json", mutated(topo, ["description"], 5))
write("topo_notes_string.json", mutated(load("topologies/dgx1-v100.json"), ["notes"], "see the datasheet"))
write("cal_duplicate_member.json", json.dumps(cal, indent=1).replace('"dtsim_calibration": 1', '"dtsim_calibration": 1, "dtsim_calibration": 1'))
write("scenario_duplicate_member.json", json.dumps(load("scenarios/seed-4gpu-ddp.json"), indent=1).replace('"gpus": 4', '"gpus": 4, "gpus": 2'))
write("scenario_description_number.json", mutated(load("scenarios/seed-4gpu-ddp.json"), ["description"], 1))
# Both spellings of the batch in one file (issue 29: micro_batch or the older batch_per_gpu, not both)
write("scenario_micro_and_per_gpu.json", mutated(load("scenarios/seed-4gpu-ddp.json"), ["training", "micro_batch"], 4))
write("profile_fwd_huge.json", mutated(prof, ["model", "layers", 0, "fwd_s"], 1e17))
# Round 3: calibration link figures without an upper bound, informational sections of any type;
# sweep --collect folders with a point twice, values of a field not varied, a negative time.
for name, (path, value) in {
    "cal_per_lane_huge": (["links", "nvlink", "bandwidth_GBps_per_lane"], 1e17),
    "cal_by_lanes_negative": (["links", "nvlink", "bandwidth_GBps_by_lanes"], {"1": -48}),
    "cal_by_lanes_key_text": (["links", "nvlink", "bandwidth_GBps_by_lanes"], {"two": 48}),
    "cal_pairs_negative": (["links", "pcie", "pairs"], -3),
    "cal_nodes_string": (["nodes"], "8"),
    "cal_topology_number": (["topology"], 5),
    "cal_fit_string": (["fit"], "good"),
}.items():
    write(name + ".json", mutated(cal, path, value))
# UBSan (campaign round 2): a size that fits 64 bits but not the cost model's integers
write("nccl_size_2pow64.txt", log_with([row.replace("        1024           256", "18446744073709551615           256")]))
collect_dir("collect_points_duplicate_id", manifest_with(points=[{"id": "0000", "values": {"gpus": 4}},
                                                                 {"id": "0000", "values": {"gpus": 2}}]), {"0000": RESULT})
collect_dir("collect_values_not_varied", manifest_with(points=[{"id": "0000", "values": {"training.epochs": 4}}]), {"0000": RESULT})
collect_dir("collect_result_time_negative", MANIFEST, {"0000": dict(RESULT, iteration_time_s=-1)})
# A result without the figures (helper-58: `{}` was collected as a point of 0 GPUs and 0 s that fits).
collect_dir("collect_result_no_members", MANIFEST, {"0000": {}})
collect_dir("collect_result_no_time", MANIFEST, {"0000": {k: v for k, v in RESULT.items() if k != "iteration_time_s"}})
collect_dir("collect_result_gpus_zero", MANIFEST, {"0000": dict(RESULT, gpus=0)})
collect_dir("collect_result_time_zero", MANIFEST, {"0000": dict(RESULT, iteration_time_s=0)})
collect_dir("collect_result_other_point", MANIFEST, {"0000": dict(RESULT, gpus=8)})

print("wrote", len(os.listdir(OUT)), "files to", OUT)

# --- issue 32: the host's memory bandwidth and turbo figures, the calibration's load curve, and
# host_costs.py's load-curve JSON (dtsim calibrate FILE --topology dgx1-v100 -o OUT)
host_topo_cases = {
    "topo_host_memory_zero": (["host", "memory_gbytes_per_s_per_socket"], 0),
    "topo_host_memory_huge": (["host", "memory_gbytes_per_s_per_socket"], 1e9),
    "topo_host_turbo_inverted": (["host", "turbo_ghz"], {"max": 2.0, "all_core": 3.0}),
    "topo_host_turbo_all_core_only": (["host", "turbo_ghz"], {"all_core": 3.0}),
    "topo_host_turbo_unknown": (["host", "turbo_ghz"], {"max": 3.0, "all_core": 2.5, "avx": 2.0}),
    "topo_host_sources_number": (["host", "sources"], [1]),
}
for name, (path, value) in host_topo_cases.items():
    write(name + ".json", mutated(topo, path, value))
host_cal_cases = {
    "cal_host_not_object": (["host"], 3),
    "cal_host_ratio_zero": (["host"], {"load_curve": [{"busy_fraction": 0.5, "cost_ratio": 0}]}),
    "cal_host_fraction_two": (["host"], {"load_curve": [{"busy_fraction": 2, "cost_ratio": 1.1}]}),
    "cal_host_unordered": (["host"], {"load_curve": [{"busy_fraction": 0.5, "cost_ratio": 1.1},
                                                     {"busy_fraction": 0.25, "cost_ratio": 1.0}]}),
    "cal_host_curve_empty": (["host"], {"load_curve": []}),
}
for name, (path, value) in host_cal_cases.items():
    write(name + ".json", mutated(cal, path, value))
hc = load("calibration/measured/h200-1gpu-2026-11-27/host_loadcurve.json")
hc["loadcurve"]["idle"] = hc["loadcurve"]["idle"][:2]
hc["loadcurve"]["with_training"] = hc["loadcurve"]["with_training"][:3]
for series in ("idle", "with_training"):
    for p in hc["loadcurve"][series]:
        p["per_process"] = p["per_process"][:1]
hostcosts_cases = {
    "hostcosts_no_loadcurve": (["loadcurve"], DELETE),
    "hostcosts_rate_zero": (["loadcurve", "with_training", 1, "samples_per_s"], 0),
    "hostcosts_not_all_ok": (["loadcurve", "with_training", 2, "ok"], 1),
    "hostcosts_siblings_text": (["loadcurve", "cpu", "siblings"], "many"),
    "hostcosts_cpu_count_zero": (["loadcurve", "cpu", "cpu_count"], 0),
    "hostcosts_series_object": (["loadcurve", "with_training"], {}),
    # helper-16: each was taken, or blamed on the calibration being written
    "hostcosts_rate_tiny": (["loadcurve", "with_training", 2, "samples_per_s"], 1e-6),
    "hostcosts_schema_99": (["schema_version"], 99),
    "hostcosts_schema_text": (["schema_version"], "1"),
    "hostcosts_point_errors": (["loadcurve", "with_training", 1, "errors"], ["boom"]),
}
for name, (path, value) in hostcosts_cases.items():
    write(name + ".json", mutated(hc, path, value))
reversed_points = copy.deepcopy(hc)
reversed_points["loadcurve"]["with_training"].reverse()
write("hostcosts_points_reversed.json", json.dumps(reversed_points, indent=1))
duplicated_point = copy.deepcopy(hc)
duplicated_point["loadcurve"]["with_training"].insert(2, duplicated_point["loadcurve"]["with_training"][1])
write("hostcosts_point_twice.json", json.dumps(duplicated_point, indent=1))
