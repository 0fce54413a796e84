#!/usr/bin/env python3
"""GPU memory of plain single-GPU training, measured over one steady-state iteration, per
configuration: what dtsim's memory model (issue 30) is checked against.

    python3 calibration/bench/memory_peaks.py -o memory_peaks.json [--configs a,b,...] [--budget-s 230]
    python3 calibration/bench/memory_peaks.py --list

Each configuration runs in a fresh Python process of its own (a new CUDA context, an empty caching
allocator, no cuDNN or cuBLAS state left by another model), under a time limit; the parent collects
their JSON into one file, written again after every configuration, so a stop midway keeps what was
measured. A configuration that fails or runs out of time is recorded with its error and the tail of
its output, and the next one runs.

In a configuration: the model, its optimizer and a synthetic batch are made on the GPU
(torch.backends.cudnn.benchmark = True, as NVIDIA's DeepLearningExamples set it). Warm-up
iterations run until the optimizer has taken a step (its state exists; GradScaler may skip the first
steps on an overflow) and at least two have run. Then one iteration is measured phase by phase:

    forward (the loss included) | backward | optimizer step (scaler.step + update) | zero_grad(set_to_none)

torch.cuda.reset_peak_memory_stats() before each phase and a synchronize after it give each phase's
peak allocated and reserved bytes; memory_allocated() is read at the points between the phases. The
peak of the iteration is the largest phase peak (the allocator tracks peaks continuously, and a reset
sets the peak to the current value, so nothing between the phases escapes). A further iteration runs
with a single reset at its start and no phase synchronisation, as a check that the iteration is
steady; torch.cuda.memory_stats() is kept whole after it. Device memory is read with
torch.cuda.mem_get_info() (the whole GPU: this process alone runs) and nvidia-smi's per-process used
memory, at the process's start (before CUDA), after CUDA's initialisation, and at the end.

The figures are raw: nothing is subtracted, rounded or fitted.
"""
import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_json import write_json_atomically  # noqa: E402

GiB = 2**30

# name: (family, model, precision, batch, extra). precision: fp32 (PyTorch's defaults: TF32
# convolutions through cuDNN, full fp32 matmuls) or amp (float16 autocast + GradScaler).
CONFIGS = {
    # in the order they run: the two rows of issue 30 first, then the largest model, then the rest
    "resnet50_fp32_b128": dict(family="cnn", model="resnet50", precision="fp32", batch=128),
    "gpt2_amp_b16_sdpa": dict(family="gpt2", model="gpt2", precision="amp", batch=16, seq=1024, attn="sdpa"),
    "gpt2xl_amp_b4_sdpa": dict(family="gpt2", model="gpt2-xl", precision="amp", batch=4, seq=1024, attn="sdpa"),
    "bertlarge_amp_b32_sdpa": dict(family="bert", model="bert-large", precision="amp", batch=32, seq=128, attn="sdpa"),
    "resnet50_amp_b256_cl": dict(family="cnn", model="resnet50", precision="amp", batch=256, channels_last=True),
    "bertlarge_fp32_b32_sdpa": dict(family="bert", model="bert-large", precision="fp32", batch=32, seq=128, attn="sdpa"),
    "gpt2_fp32_b8_sdpa": dict(family="gpt2", model="gpt2", precision="fp32", batch=8, seq=1024, attn="sdpa"),
    "gpt2_amp_b16_eager": dict(family="gpt2", model="gpt2", precision="amp", batch=16, seq=1024, attn="eager"),
    "bertlarge_amp_b32_eager": dict(family="bert", model="bert-large", precision="amp", batch=32, seq=128, attn="eager"),
    "gpt2_amp_b16_sdpa_noforeach": dict(family="gpt2", model="gpt2", precision="amp", batch=16, seq=1024, attn="sdpa",
                                        foreach=False),
    "resnet18_fp32_b256": dict(family="cnn", model="resnet18", precision="fp32", batch=256),
    "vgg16_fp32_b64": dict(family="cnn", model="vgg16", precision="fp32", batch=64),
    "resnet101_amp_b128": dict(family="cnn", model="resnet101", precision="amp", batch=128),
    "gpt2_fp32_b8_eager": dict(family="gpt2", model="gpt2", precision="fp32", batch=8, seq=1024, attn="eager"),
}

STAT_KEYS = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
             "requested_bytes.all.peak", "inactive_split_bytes.all.peak", "inactive_split.all.peak",
             "segment.all.peak", "allocation.all.peak", "allocated_bytes.all.current",
             "reserved_bytes.all.current", "inactive_split_bytes.all.current", "segment.all.current",
             "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "num_sync_all_streams",
             "oversize_allocations.peak", "oversize_segments.peak")


def smi_used_mib():
    """nvidia-smi's view: the GPU's used memory and the compute processes' used memory (MiB)."""
    out = {}
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        used, total = [int(v) for v in r.stdout.strip().splitlines()[0].split(",")]
        out["gpu_used_MiB"], out["gpu_total_MiB"] = used, total
    except Exception as e:   # noqa: BLE001
        out["gpu_error"] = f"{type(e).__name__}: {e}"
    try:
        r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        apps = []
        for line in r.stdout.strip().splitlines():
            p = [v.strip() for v in line.split(",")]
            if len(p) == 2:
                apps.append({"pid": p[0], "used_MiB": p[1]})
        out["compute_apps"] = apps
        out["own_pid"] = os.getpid()
    except Exception as e:   # noqa: BLE001
        out["apps_error"] = f"{type(e).__name__}: {e}"
    return out


# ---------------------------------------------------------------------------------------------
# one configuration (child process)


def build(cfg, dev):
    """model, optimizer, a forward closure returning the loss, the bytes of the input batch."""
    import torch
    fam = cfg["family"]
    foreach = cfg.get("foreach")   # None: PyTorch's default (foreach on CUDA)
    if fam == "cnn":
        import torchvision
        fmt = torch.channels_last if cfg.get("channels_last") else torch.contiguous_format
        model = getattr(torchvision.models, cfg["model"])(weights=None).to(dev).to(memory_format=fmt).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=foreach)
        x = torch.randn(cfg["batch"], 3, 224, 224, device=dev).to(memory_format=fmt)
        y = torch.randint(0, 1000, (cfg["batch"],), device=dev)
        loss_fn = torch.nn.CrossEntropyLoss()

        def forward():
            return loss_fn(model(x), y)
        info = {"optimizer": "SGD(lr=0.1, momentum=0.9)", "loss": "CrossEntropyLoss",
                "memory_format": "channels_last" if cfg.get("channels_last") else "contiguous"}
        return model, opt, forward, x.numel() * x.element_size() + y.numel() * y.element_size(), info
    import transformers
    if fam == "bert":
        conf = transformers.BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                                       num_attention_heads=16, intermediate_size=4096, max_position_embeddings=512,
                                       attn_implementation=cfg["attn"])
        cls = transformers.BertForMaskedLM
    else:
        dims = {"gpt2": dict(n_embd=768, n_layer=12, n_head=12), "gpt2-xl": dict(n_embd=1600, n_layer=48, n_head=25)}
        conf = transformers.GPT2Config(n_positions=1024, vocab_size=50257, attn_implementation=cfg["attn"],
                                       **dims[cfg["model"]])
        cls = transformers.GPT2LMHeadModel
    try:
        conf._attn_implementation = cfg["attn"]
    except Exception:   # noqa: BLE001 (a release where it is read-only: the constructor's kwarg holds)
        pass
    with torch.device(dev):   # weights initialised on the GPU (fast), as fp32
        model = cls(conf)
    model = model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, foreach=foreach)
    b, s, v = cfg["batch"], cfg["seq"], conf.vocab_size
    g = torch.Generator(device=dev)
    g.manual_seed(0)
    ids = torch.randint(0, v, (b, s), device=dev, generator=g)
    if fam == "bert":   # masked LM: 15% of the positions carry a label, the rest -100
        labels = torch.where(torch.rand(b, s, device=dev, generator=g) < 0.15, ids, torch.full_like(ids, -100))
    else:
        labels = ids

    def forward():
        return model(input_ids=ids, labels=labels).loss
    info = {"optimizer": "AdamW(lr=1e-4, weight_decay=0.01)", "loss": "the model's own (labels=...)",
            "attn_implementation_requested": cfg["attn"],
            "attn_implementation_used": getattr(model.config, "_attn_implementation", None),
            "transformers": transformers.__version__, "config": {k: getattr(conf, k, None) for k in (
                "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "n_embd", "n_layer", "n_head", "n_positions", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "resid_pdrop", "embd_pdrop", "attn_pdrop", "tie_word_embeddings")}}
    return model, opt, forward, ids.numel() * ids.element_size() * 2, info


def tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def optimizer_state_bytes(opt):
    import torch
    n = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.is_cuda:
                n += v.numel() * v.element_size()
    return n


def pick_stats(d):
    return {k: d.get(k) for k in STAT_KEYS if k in d}


def run_child(name, out_path):
    cfg = CONFIGS[name]
    res = {"name": name, "config": cfg, "status": "started", "pid": os.getpid()}
    t_start = time.time()

    def save():
        res["seconds"] = round(time.time() - t_start, 2)
        write_json_atomically(out_path, res)
    res["smi_before_cuda"] = smi_used_mib()
    import torch
    dev = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = True
    torch.cuda.init()
    torch.zeros(1, device=dev)
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    res["after_cuda_init"] = {"mem_get_info_used_bytes": total - free, "total_bytes": total,
                              "smi": smi_used_mib(), "allocated": torch.cuda.memory_allocated(),
                              "reserved": torch.cuda.memory_reserved()}
    res["settings"] = {"cudnn.benchmark": torch.backends.cudnn.benchmark,
                       "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                       "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                       "float32_matmul_precision": torch.get_float32_matmul_precision(),
                       "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
                       "zero_grad": "set_to_none=True (after the step)"}
    save()
    model, opt, forward, input_bytes, info = build(cfg, dev)
    res["info"] = info
    amp = cfg["precision"] == "amp"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    params = [p for p in model.parameters()]
    res["params"] = {"count": sum(p.numel() for p in params), "tensors": len(params),
                     "bytes": tensor_bytes(params), "dtypes": sorted({str(p.dtype) for p in params}),
                     "buffers_bytes": tensor_bytes(list(model.buffers())), "input_batch_bytes": input_bytes}
    res["optimizer_defaults"] = {k: (v if isinstance(v, (bool, int, float, str, type(None))) else str(v))
                                 for k, v in opt.defaults.items()}
    res["precision_setup"] = ("float16 autocast (torch.autocast('cuda', dtype=torch.float16)) + GradScaler, fp32 weights"
                              if amp else "fp32 weights and activations (PyTorch defaults, no autocast)")
    torch.cuda.synchronize()
    res["after_build"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}
    save()

    def fwd():
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            return forward()

    def one_iteration():
        loss = fwd()
        scaler.scale(loss).backward()
        del loss
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    # Warm-up: at least two iterations, and until the optimizer has state (a step was taken).
    torch.cuda.reset_peak_memory_stats()
    warm, t0 = 0, time.time()
    while warm < 2 or (optimizer_state_bytes(opt) == 0 and warm < 10):
        one_iteration()
        warm += 1
    torch.cuda.synchronize()
    res["warmup"] = {"iterations": warm, "seconds": round(time.time() - t0, 2),
                     "max_allocated": torch.cuda.max_memory_allocated(),
                     "max_reserved": torch.cuda.max_memory_reserved(),
                     "optimizer_state_bytes": optimizer_state_bytes(opt),
                     "scale": scaler.get_scale() if amp else None}
    save()

    # The measured iteration, phase by phase (tried again, up to twice, if GradScaler skipped its step).
    for attempt in range(3):
        m = {"attempt": attempt}
        sync = torch.cuda.synchronize
        sync()
        torch.cuda.reset_peak_memory_stats()
        m["before_forward"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}
        phases = {}

        def phase(label, fn):
            sync()
            torch.cuda.reset_peak_memory_stats()
            a0 = torch.cuda.memory_allocated()
            t = time.perf_counter()
            r = fn()
            sync()
            dt = time.perf_counter() - t
            st = torch.cuda.memory_stats()
            phases[label] = {"allocated_at_start": a0, "peak_allocated": torch.cuda.max_memory_allocated(),
                             "peak_reserved": torch.cuda.max_memory_reserved(),
                             "allocated_at_end": torch.cuda.memory_allocated(),
                             "reserved_at_end": torch.cuda.memory_reserved(), "seconds": round(dt, 4),
                             "stats": pick_stats(st)}
            return r
        loss = phase("forward", fwd)
        m["after_forward"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}
        phase("backward", lambda: scaler.scale(loss).backward())
        m["loss"] = float(loss.detach().float())
        del loss
        m["after_backward"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
                               "grad_bytes": tensor_bytes([p.grad for p in params if p.grad is not None]),
                               "grad_dtypes": sorted({str(p.grad.dtype) for p in params if p.grad is not None})}
        scale_before = scaler.get_scale() if amp else None

        def step():
            scaler.step(opt)
            scaler.update()
        phase("step", step)
        m["after_step"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
                           "optimizer_state_bytes": optimizer_state_bytes(opt)}
        phase("zero_grad", lambda: opt.zero_grad(set_to_none=True))
        m["after_zero_grad"] = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved()}
        m["phases"] = phases
        m["peak_allocated"] = max(p["peak_allocated"] for p in phases.values())
        m["peak_reserved"] = max(p["peak_reserved"] for p in phases.values())
        m["peak_phase"] = max(phases, key=lambda k: phases[k]["peak_allocated"])
        if amp:
            m["scale_before_step"], m["scale_after_step"] = scale_before, scaler.get_scale()
            m["step_skipped"] = scaler.get_scale() < scale_before
        res["measured"] = m
        save()
        if not m.get("step_skipped"):
            break

    # A check: one more iteration, one reset at its start, no synchronisation between phases.
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    one_iteration()
    torch.cuda.synchronize()
    st = torch.cuda.memory_stats()
    res["check_iteration"] = {"peak_allocated": torch.cuda.max_memory_allocated(),
                              "peak_reserved": torch.cuda.max_memory_reserved(),
                              "allocated_at_end": torch.cuda.memory_allocated(), "seconds": round(time.perf_counter() - t, 4),
                              "scale": scaler.get_scale() if amp else None}
    res["memory_stats_after_check"] = {k: v for k, v in st.items()}
    free, total = torch.cuda.mem_get_info()
    res["end"] = {"mem_get_info_used_bytes": total - free, "reserved": torch.cuda.memory_reserved(),
                  "smi": smi_used_mib()}
    res["status"] = "ok"
    save()


# ---------------------------------------------------------------------------------------------
# the parent: one process per configuration


def versions():
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:   # noqa: BLE001
        info["torch_error"] = f"{type(e).__name__}: {e}"
    for mod in ("torchvision", "transformers"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception as e:   # noqa: BLE001
            info[mod] = f"unavailable: {type(e).__name__}: {e}"
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        info["gpu"] = r.stdout.strip()
    except Exception as e:   # noqa: BLE001
        info["gpu"] = f"nvidia-smi failed: {type(e).__name__}: {e}"
    return info


def summary_line(r):
    if r.get("status") != "ok":
        return f"{r['name']:30s} {r.get('status')}: {r.get('error', '')}"
    m = r["measured"]
    ph = m["phases"]
    return (f"{r['name']:30s} params {r['params']['count'] / 1e6:8.1f} M  peak alloc {m['peak_allocated'] / GiB:6.2f} GiB "
            f"({m['peak_phase']})  reserved {m['peak_reserved'] / GiB:6.2f}  before fwd "
            f"{m['before_forward']['allocated'] / GiB:5.2f}  after fwd {m['after_forward']['allocated'] / GiB:6.2f}  "
            f"peaks fwd/bwd/step {ph['forward']['peak_allocated'] / GiB:.2f}/{ph['backward']['peak_allocated'] / GiB:.2f}/"
            f"{ph['step']['peak_allocated'] / GiB:.2f}  check {r['check_iteration']['peak_allocated'] / GiB:.2f}  "
            f"device used {r['end']['mem_get_info_used_bytes'] / GiB:.2f} GiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names (--list shows them)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--budget-s", type=float, default=230, help="start no configuration after this many seconds")
    ap.add_argument("--config-timeout-s", type=float, default=75, help="time limit of one configuration's process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.list:
        for k, v in CONFIGS.items():
            print(k, json.dumps(v))
        return
    if args.child:
        try:
            run_child(args.child, args.child_out)
        except BaseException as e:   # noqa: BLE001 (recorded, then the exit code says so)
            try:
                with open(args.child_out) as f:
                    res = json.load(f)
            except Exception:   # noqa: BLE001
                res = {"name": args.child, "config": CONFIGS.get(args.child)}
            res["status"] = "failed"
            res["error"] = f"{type(e).__name__}: {e}"
            res["traceback"] = traceback.format_exc()[-3000:]
            write_json_atomically(args.child_out, res)
            print(res["traceback"], file=sys.stderr)
            sys.exit(1)
        return
    if not args.output:
        ap.error("-o is required")
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        sys.exit(f"memory_peaks.py: unknown configuration(s) {unknown}; --list shows them")
    t0 = time.time()
    doc = {"tool": "dtsim-memory-peaks", "schema_version": 1, "versions": versions(),
           "method": __doc__.split("\n\n", 2)[2].strip(), "configs": [], "not_measured": []}
    write_json_atomically(args.output, doc)
    print(json.dumps(doc["versions"]), flush=True)
    tmpdir = tempfile.mkdtemp(prefix="dtsim-mem-")
    for name in names:
        if time.time() - t0 > args.budget_s:
            doc["not_measured"].append(f"{name}: not started, the {args.budget_s:.0f} s budget was spent")
            print(f"{name}: skipped (budget)", flush=True)
            continue
        out = os.path.join(tmpdir, name + ".json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--child-out", out]
        t = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.config_timeout_s,
                               env=dict(os.environ, PYTHONUNBUFFERED="1"))
            rc, text = p.returncode, (p.stdout or "") + (p.stderr or "")
        except subprocess.TimeoutExpired as e:
            rc = "timeout"
            text = ""
            for s in (e.stdout, e.stderr):
                if s:
                    text += s.decode(errors="replace") if isinstance(s, bytes) else s
        try:
            with open(out) as f:
                res = json.load(f)
        except Exception as e:   # noqa: BLE001
            res = {"name": name, "config": CONFIGS[name], "status": "failed",
                   "error": f"no result from the child ({type(e).__name__})"}
        if rc == "timeout" and res.get("status") != "ok":
            res["status"] = "timeout"
            res["error"] = f"no result within {args.config_timeout_s:.0f} s (last stage saved: {sorted(res)})"
        res["exit_code"] = rc
        res["wall_s"] = round(time.time() - t, 2)
        if res.get("status") != "ok":
            res["output_tail"] = text[-4000:]
            doc["not_measured"].append(f"{name}: {res.get('status')}: {res.get('error')}")
        doc["configs"].append(res)
        doc["elapsed_s"] = round(time.time() - t0, 1)
        write_json_atomically(args.output, doc)
        print(summary_line(res) + f"  [{res['wall_s']} s]", flush=True)
        if res.get("status") != "ok":
            print(text[-2500:], flush=True)
        gc.collect()
    print(f"-> {args.output} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
