#!/usr/bin/env python3
"""Throughput of the GEMMs a Megatron-LM transformer layer runs on one tensor-parallel rank, by shape:
the measurement a shape-dependent compute model (issue 29: measured throughput per GPU rises with
model size) is built and checked on.

    python3 calibration/bench/gemm_shapes.py -o gemm_shapes.json [--budget-s 150]

For each hidden size h, tensor-parallel degree t and token count m (micro-batch x sequence), the
four linears of a layer as Megatron splits them (Shoeybi et al. 2019): QKV (column-parallel,
n = 3h/t, k = h), attention output (row-parallel, n = h, k = h/t), MLP up (n = 4h/t, k = h) and
MLP down (n = h, k = 4h/t). Each is timed as its forward (m x k times k x n), its input gradient
(m x n times n x k) and its weight gradient (k x m times m x n), in bf16 with torch.matmul (cuBLAS),
as CUDA-event time of a CUDA graph replaying 10 back-to-back products (no host launch in it), after
warm-up; the median of the repetitions is kept with min and max, and the eager one-call time beside
it. FLOP/s = 2 m n k / time. A few small shapes (a CNN classifier's 2048 x 1000 at small batch) are
timed too. The JSON is written again after every shape, so a stop keeps what was
measured. Raw figures: nothing fitted.
"""
import argparse
import platform
import statistics
import time

from bench_json import write_json_atomically

HIDDEN = [4096, 6144, 8192, 12288, 16384, 20480, 25600]
TENSOR = [1, 2, 4, 8]
TOKENS = [2048, 4096]
SMALL = [(32, 1000, 2048), (128, 1000, 2048), (256, 1000, 2048), (256, 4096, 4096), (512, 1024, 1024)]


def layer_gemms(h, t):
    return [("qkv", 3 * h // t, h), ("attn_out", h, h // t), ("mlp_up", 4 * h // t, h), ("mlp_down", h, 4 * h // t)]


def event_seconds(torch, work, reps):
    """CUDA-event seconds of `work()`, once per repetition."""
    out = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e-3)
    return out


def time_matmul(torch, m, n, k, dtype, reps, per_sample=10):
    """Kernel time: each sample replays a CUDA graph of `per_sample` back-to-back products, so the
    host's launch of each (tens of microseconds through torch.matmul's dispatch) is not in it, as a
    training step's kernels are queued ahead of the GPU. The earlier form of this program timed one
    eager call between two events: that figure, host launch included, is kept as eager_median_s
    (the 2026-11-27 H200 table was taken that way: its small GEMMs, under ~100 us, read slow)."""
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    eager = event_seconds(torch, lambda: torch.matmul(a, b), reps)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream before capture, as torch.cuda.graphs asks
        for _ in range(3):
            torch.matmul(a, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_sample):
            torch.matmul(a, b)
    graph.replay()
    torch.cuda.synchronize()
    samples = [t / per_sample for t in event_seconds(torch, graph.replay, reps)]
    del graph, a, b
    med = statistics.median(samples)
    return {"m": m, "n": n, "k": k, "median_s": med, "min_s": min(samples), "max_s": max(samples), "reps": reps,
            "products_per_rep": per_sample, "tflops": 2.0 * m * n * k / med / 1e12,
            "eager_median_s": statistics.median(eager)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import torch
    props = torch.cuda.get_device_properties(0)
    doc = {"program": "gemm_shapes.py", "torch": torch.__version__, "cuda": torch.version.cuda,
           "python": platform.python_version(), "gpu": props.name, "sm_count": props.multi_processor_count,
           "dtype": "bfloat16", "layer_gemms": [], "small_gemms": [], "stopped_by_budget": False}
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True  # PyTorch's default
    t0 = time.time()
    for m, n, k in SMALL:
        doc["small_gemms"].append(time_matmul(torch, m, n, k, torch.bfloat16, args.reps))
    write_json_atomically(args.output, doc)
    for h in HIDDEN:
        for t in TENSOR:
            for m in TOKENS:
                if time.time() - t0 > args.budget_s:
                    doc["stopped_by_budget"] = True
                    write_json_atomically(args.output, doc)
                    print("budget reached", flush=True)
                    return
                for name, n, k in layer_gemms(h, t):
                    row = {"hidden": h, "tensor_parallel": t, "tokens": m, "linear": name}
                    try:
                        row["forward"] = time_matmul(torch, m, n, k, torch.bfloat16, args.reps)
                        row["input_grad"] = time_matmul(torch, m, k, n, torch.bfloat16, args.reps)
                        row["weight_grad"] = time_matmul(torch, k, n, m, torch.bfloat16, args.reps)
                    except Exception as e:  # noqa: BLE001 (kept in the JSON, the next shape runs)
                        row["error"] = repr(e)
                    doc["layer_gemms"].append(row)
                    print(h, t, m, name, {p: round(row[p]["tflops"], 1) for p in ("forward", "input_grad", "weight_grad")
                                          if p in row}, flush=True)
                torch.cuda.empty_cache()
                write_json_atomically(args.output, doc)
    doc["elapsed_s"] = time.time() - t0
    write_json_atomically(args.output, doc)


if __name__ == "__main__":
    main()
