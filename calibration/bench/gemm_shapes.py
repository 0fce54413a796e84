#!/usr/bin/env python3
"""Throughput of the GEMMs a Megatron-LM transformer layer runs on one tensor-parallel rank, by shape:
the measurement a shape-dependent compute model (issue 29: measured throughput per GPU rises with
model size) is built and checked on.

    python3 calibration/bench/gemm_shapes.py -o gemm_shapes.json [--budget-s 300] [--sections ...]

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

Two sections for sharded data parallelism (issue 31: one compute efficiency, found on a table's
smallest model, leaves its larger models 10-24% slow), each run before the Megatron grid:
  model_gemms      every linear of one layer of the models in tests/data/training/fsdp_*.csv as those
                   runs had them on one GPU (no tensor split: llm-foundry's MPT with its fused Wqkv and
                   4h MLP; Llama's separate q, k, v, o, gate, up and down, GQA's narrower k and v), at
                   8,192 tokens, forward / input-gradient / weight-gradient as above; the FSDP x TP
                   runs' models also at their per-rank shapes under TP 4 and 8 (16,384 tokens);
  attention        F.scaled_dot_product_attention(is_causal=True) forward, and forward + backward, per
                   SDPA backend this torch has (flash, efficient, cudnn), bf16, for each model's heads
                   and head dimension at its sequence lengths (16,384 tokens per call, GQA's key and
                   value heads repeated to the query heads first, as the models' code does): kernel
                   seconds with the FLOPs counted both dense (4 b h s^2 d forward) and causal (half),
                   so the fused kernel's rate against the GEMMs' (sim/strategies/attention_rate.hpp)
                   can be read off instead of assumed.
`--sections` picks which run (default all, in the order small, models, attention, megatron).
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


# The models of tests/data/training/fsdp_*.csv: (name, hidden, heads, kv_heads, ffn, family, sequence lengths).
# MPT (fsdp_runs_foundry.csv, fsdp_seqlen_foundry.csv): expansion_ratio 4, fused Wqkv; Llama 2 / 3
# (fsdp_runs_fms.csv, fsdp_runs_torchtitan.csv, fsdp_runs_large.csv, fsdp_runs.csv): separate projections.
MODELS = [
    ("mpt-125m", 768, 12, 12, 3072, "mpt", (2048,)),
    ("mpt-350m", 1024, 16, 16, 4096, "mpt", (2048,)),
    ("mpt-760m", 1536, 12, 12, 6144, "mpt", (2048,)),
    ("mpt-1b", 2048, 16, 16, 8192, "mpt", (2048,)),
    ("mpt-3b", 2560, 20, 20, 10240, "mpt", (2048,)),
    ("mpt-7b", 4096, 32, 32, 16384, "mpt", (2048, 8192)),
    ("mpt-13b", 5120, 40, 40, 20480, "mpt", (2048,)),
    ("mpt-30b", 7168, 56, 56, 28672, "mpt", (2048,)),
    ("mpt-70b", 8192, 64, 64, 32768, "mpt", (2048,)),
    ("llama2-7b", 4096, 32, 32, 11008, "llama", (4096,)),
    ("llama3-8b", 4096, 32, 8, 14336, "llama", (8192,)),
    ("llama2-13b", 5120, 40, 40, 13824, "llama", (4096,)),
    ("llama3-13b", 5120, 40, 8, 17920, "llama", (4096,)),
    ("llama2-34b", 8192, 64, 8, 22016, "llama", (4096,)),
    ("llama-70b", 8192, 64, 8, 28672, "llama", (4096, 8192)),
]
# Tokens per product: the tables' micro-batches hold 8,192 to 53,248 tokens, where a GEMM's rate no longer
# depends on m (its N x K tiles fill the GPU many times over); one size keeps the section near a minute.
MODEL_TOKENS = [8192]
# FSDP x TP runs of the tables (fsdp_runs_torchtitan.csv's H100 rows: TP 8 with 98,304 and 131,072 tokens per
# rank; fsdp_runs_large.csv, fsdp_runs_kempner.csv: TP 4), timed again at their per-rank shapes (the
# column-parallel linears' n and the row-parallel ones' k divided by the degree) with 16,384 tokens.
MODEL_TENSOR_PARALLEL = {"llama3-8b": (4, 8), "llama3-13b": (4,), "llama-70b": (4, 8)}
MODEL_TP_TOKENS = 16384


def model_linears(hidden, heads, kv_heads, ffn, family, t=1):
    """(name, n, k) of each linear of one layer on one of `t` tensor ranks, as the model's code multiplies
    them: the column-parallel linears' n and the row-parallel ones' (out_proj, o_proj, down_proj) k split."""
    kv = hidden // heads * kv_heads
    if family == "mpt":
        return [("Wqkv", 3 * hidden // t, hidden), ("out_proj", hidden, hidden // t), ("up_proj", ffn // t, hidden),
                ("down_proj", hidden, ffn // t)]
    return [("q_proj", hidden // t, hidden), ("k_proj", kv // t, hidden), ("v_proj", kv // t, hidden),
            ("o_proj", hidden, hidden // t), ("gate_proj", ffn // t, hidden), ("up_proj", ffn // t, hidden),
            ("down_proj", hidden, ffn // t)]


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


def time_linear(torch, row, m, n, k, reps, label):
    """A linear's three products (forward m x k x n, input gradient, weight gradient) into `row`, printed
    after `label`; an error is kept in the row and the next shape runs."""
    try:
        row["forward"] = time_matmul(torch, m, n, k, torch.bfloat16, reps)
        row["input_grad"] = time_matmul(torch, m, k, n, torch.bfloat16, reps)
        row["weight_grad"] = time_matmul(torch, k, n, m, torch.bfloat16, reps)
    except Exception as e:  # noqa: BLE001
        row["error"] = repr(e)
    print(*label, {p: round(row[p]["tflops"], 1) for p in ("forward", "input_grad", "weight_grad") if p in row},
          flush=True)
    return row


def sdpa_backends(torch):
    """The SDPA backends to time, by name, where this torch can force one (torch.nn.attention)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return [("default", None)]
    out = []
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        if hasattr(SDPBackend, name):
            out.append((name.lower(), lambda b=getattr(SDPBackend, name): sdpa_kernel(b)))
    return out


def time_attention(torch, batch, heads, seq, head_dim, reps, backend):
    """Kernel seconds of causal SDPA forward, and of forward + backward (CUDA events around the
    queued kernels; each call is milliseconds long, so the host's launch is a small part)."""
    import contextlib
    F = torch.nn.functional
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    ctx = backend if backend is not None else contextlib.nullcontext

    def forward():
        with ctx():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward_backward():  # the gradients returned, not accumulated into .grad (no extra add kernels)
        torch.autograd.grad(forward(), (q, k, v), grad)

    for _ in range(2):
        forward_backward()
    torch.cuda.synchronize()
    fwd = statistics.median(event_seconds(torch, forward, reps))
    both = statistics.median(event_seconds(torch, forward_backward, reps))
    dense_fwd = 4.0 * batch * heads * seq * seq * head_dim
    return {"batch": batch, "heads": heads, "seq": seq, "head_dim": head_dim, "forward_s": fwd,
            "forward_backward_s": both, "reps": reps, "dense_forward_flops": dense_fwd,
            "forward_tflops_dense": dense_fwd / fwd / 1e12, "forward_tflops_causal": dense_fwd / 2 / fwd / 1e12,
            "forward_backward_tflops_dense": 3.5 * dense_fwd / both / 1e12,
            "forward_backward_tflops_causal": 3.5 * dense_fwd / 2 / both / 1e12}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--sections", default="small,models,attention,megatron",
                    help="comma-separated: small, models, attention, megatron")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    import torch
    props = torch.cuda.get_device_properties(0)
    doc = {"program": "gemm_shapes.py", "torch": torch.__version__, "cuda": torch.version.cuda,
           "python": platform.python_version(), "gpu": props.name, "sm_count": props.multi_processor_count,
           "dtype": "bfloat16", "layer_gemms": [], "small_gemms": [], "model_gemms": [], "attention": [],
           "attention_flops_note": "forward + backward counted as 3.5 x the forward's (FlashAttention-2's "
                                   "convention: backward 2.5 x, its recomputation included)",
           "stopped_by_budget": False}
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True  # PyTorch's default
    t0 = time.time()

    def out_of_time():
        if time.time() - t0 <= args.budget_s:
            return False
        doc["stopped_by_budget"] = True
        write_json_atomically(args.output, doc)
        print("budget reached", flush=True)
        return True

    if "small" in sections:
        for m, n, k in SMALL:
            doc["small_gemms"].append(time_matmul(torch, m, n, k, torch.bfloat16, args.reps))
        write_json_atomically(args.output, doc)
    for name, hidden, heads, kv_heads, ffn, family, seqs in MODELS if "models" in sections else []:
        shapes = [(1, m) for m in MODEL_TOKENS] + [(t, MODEL_TP_TOKENS) for t in MODEL_TENSOR_PARALLEL.get(name, ())]
        for t, m in shapes:
            if out_of_time():
                return
            for linear, n, k in model_linears(hidden, heads, kv_heads, ffn, family, t):
                row = {"model": name, "hidden": hidden, "tensor_parallel": t, "tokens": m, "linear": linear}
                doc["model_gemms"].append(time_linear(torch, row, m, n, k, args.reps, (name, t, m, linear)))
            torch.cuda.empty_cache()
            write_json_atomically(args.output, doc)
    for name, hidden, heads, kv_heads, ffn, family, seqs in MODELS if "attention" in sections else []:
        for seq in seqs:
            for backend_name, backend in sdpa_backends(torch):
                if out_of_time():
                    return
                row = {"model": name, "backend": backend_name}
                try:
                    row.update(time_attention(torch, max(1, 16384 // seq), heads, seq, hidden // heads, args.reps,
                                              backend))
                    print(name, seq, backend_name, round(row["forward_backward_tflops_causal"], 1), flush=True)
                except Exception as e:  # noqa: BLE001 (a backend this GPU or shape lacks)
                    row["error"] = repr(e)
                    print(name, seq, backend_name, "error", flush=True)
                doc["attention"].append(row)
                torch.cuda.empty_cache()
            write_json_atomically(args.output, doc)
    for h in HIDDEN if "megatron" in sections else []:
        for t in TENSOR:
            for m in TOKENS:
                if out_of_time():
                    return
                for name, n, k in layer_gemms(h, t):
                    row = {"hidden": h, "tensor_parallel": t, "tokens": m, "linear": name}
                    doc["layer_gemms"].append(time_linear(torch, row, m, n, k, args.reps, (h, t, m, name)))
                torch.cuda.empty_cache()
                write_json_atomically(args.output, doc)
    doc["elapsed_s"] = time.time() - t0
    write_json_atomically(args.output, doc)


if __name__ == "__main__":
    main()
