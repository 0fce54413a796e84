#!/usr/bin/env python3
"""How much a training step slows while an NCCL-like kernel runs beside it, measured on one GPU.

    python3 calibration/bench/nccl_interference.py -o interference.json [--workload resnet50|gemm]

dtsim models compute beside an AllReduce as losing (1 - m) x channels / SMs + m x 3 x bus bytes/s /
HBM bandwidth of its rate (sim/strategies/interference.hpp). This program checks both terms on a
real GPU without a second one: a stand-in for NCCL's kernel runs on its own stream with one CTA
per channel (512 threads, 128 KB of shared memory so that each holds an SM alone, as NCCL's blocks
do) and, per byte it "receives", reads two buffers and writes one (recvReduceSend's three HBM
touches), paced to a given bus rate with the GPU's global timer; torchvision ResNet-50 trains on
another stream meanwhile. Settings: channels 8..32, bus rate 0 (SMs held, no traffic) up to
unpaced. Each step time is the median of the steps run while the kernel was in flight; the
baseline is measured between settings. Needs torch, torchvision, cupy and a CUDA GPU.

--workload gemm times a transformer layer's twelve bf16 GEMMs instead of ResNet-50's convolutions (issue
31: FSDP's single-node runs behave as if their AllGathers hid almost nothing; a cuBLAS kernel sized to
the SM count may need a second wave when NCCL holds some SMs, where the linear SM share says
channels / SMs): per --gemm-shapes h:m, QKV (n 3h, k h), attention output (n h, k h), MLP up (n 4h, k h)
and down (n h, k 4h) with m tokens, each forward (X W), input gradient (dY W^T) and weight gradient
(X^T dY), torch.matmul, repeated --gemm-repeat times per step. Needs torch and cupy.
"""
import argparse
import statistics
import sys
import time

from bench_json import write_json_atomically
from resnet_training import resnet50_step

KERNEL = r"""
extern "C" __global__ void nccl_like(const float4* a, const float4* b, float4* c, long long per_cta,
                                     long long chunk, double ns_per_chunk, unsigned long long duration_ns,
                                     unsigned long long* chunks_done) {
  extern __shared__ float4 hold[];   // only to keep other blocks off this SM
  __shared__ int go;
  __shared__ unsigned long long t0;
  if (threadIdx.x == 0) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    t0 = now;
    hold[0] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();
  const float4* A = a + blockIdx.x * per_cta;
  const float4* B = b + blockIdx.x * per_cta;
  float4* C = c + blockIdx.x * per_cta;
  long long off = 0, iter = 0;
  while (true) {
    if (threadIdx.x == 0) {
      unsigned long long now;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      go = now >= t0 + duration_ns ? 2 : (now >= t0 + (unsigned long long)(iter * ns_per_chunk) ? 1 : 0);
    }
    __syncthreads();
    const int g = go;
    __syncthreads();
    if (g == 2) break;
    if (g == 0) continue;
    for (long long i = threadIdx.x; i < chunk; i += blockDim.x) {
      const float4 x = A[off + i], y = B[off + i];
      C[off + i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    off += chunk;
    if (off + chunk > per_cta) off = 0;
    ++iter;
  }
  if (threadIdx.x == 0) atomicAdd(chunks_done, (unsigned long long)iter);
}
"""


def gemm_layer_step(h, m, repeat):
    """One step: a transformer layer's twelve bf16 GEMMs (forward, input and weight gradient of QKV,
    attention output, MLP up and down, m tokens), `repeat` times; returns a function (not synchronised)."""
    import torch
    dev = torch.device("cuda", 0)
    bf16 = torch.bfloat16
    shapes = [(3 * h, h), (h, h), (4 * h, h), (h, 4 * h)]  # (n, k) of each linear
    ops = []
    for n, k in shapes:
        x = torch.randn(m, k, device=dev, dtype=bf16)
        w = torch.randn(k, n, device=dev, dtype=bf16)
        dy = torch.randn(m, n, device=dev, dtype=bf16)
        ops.append((x, w, dy))

    def step():
        for _ in range(repeat):
            for x, w, dy in ops:
                torch.matmul(x, w)        # forward
                torch.matmul(dy, w.t())   # input gradient
                torch.matmul(x.t(), dy)   # weight gradient
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--steps", type=int, default=24, help="training steps per setting")
    ap.add_argument("--tf32-first", action="store_true", help="measure the TF32 model before the AMP one")
    ap.add_argument("--buffer-mb", type=int, default=768, help="each of the kernel's three buffers (above L2)")
    ap.add_argument("--workload", choices=["resnet50", "gemm"], default="resnet50")
    ap.add_argument("--gemm-shapes", default="4096:8192,2048:16384,8192:4096",
                    help="h:m pairs (hidden size, tokens) for --workload gemm")
    ap.add_argument("--gemm-repeat", type=int, default=4, help="layers per step for --workload gemm")
    args = ap.parse_args()
    try:
        import cupy
        import torch
        if args.workload == "resnet50":
            import torchvision  # noqa: F401 (checked here, used by resnet_training)
    except ImportError as e:
        sys.exit(f"nccl_interference.py: needs torch, cupy (and torchvision for resnet50) ({e})")
    if not torch.cuda.is_available():
        print("nccl_interference.py: no CUDA device", file=sys.stderr)
        sys.exit(3)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    kernel = cupy.RawKernel(KERNEL, "nccl_like")
    smem = 128 * 1024
    kernel.max_dynamic_shared_size_bytes = smem
    threads = 512
    n = args.buffer_mb * 2**20 // 16          # float4 elements per buffer
    bufs = [cupy.ones(n * 4, dtype=cupy.float32) for _ in range(3)]
    chunk = 64 * 1024 // 16                   # 64 KiB of "received" data per step of a CTA
    counter = cupy.zeros(1, dtype=cupy.uint64)
    side = cupy.cuda.Stream(non_blocking=True)

    def launch(channels, bus_GBps, seconds):
        per_cta = n // channels
        per_cta -= per_cta % chunk
        rate_cta = bus_GBps * 1e9 / channels if bus_GBps > 0 else 0.0
        ns = chunk * 16 / rate_cta * 1e9 if rate_cta > 0 else 0.0
        if bus_GBps == 0:
            ns = 1e18                          # never moves a byte: SMs held only
        counter.fill(0)
        with side:
            kernel((channels,), (threads,),
                   (bufs[0], bufs[1], bufs[2], cupy.int64(per_cta), cupy.int64(chunk), cupy.float64(ns),
                    cupy.uint64(int(seconds * 1e9)), counter), shared_mem=smem)

    results = {"gpu": props.name, "sms": sms, "threads_per_cta": threads, "shared_mem_per_cta": smem,
               "buffer_MiB": args.buffer_mb, "torch": torch.__version__, "cupy": cupy.__version__, "models": []}
    settings = [(8, 0.0), (16, 0.0), (32, 0.0), (16, 100.0), (16, 200.0), (16, 400.0), (32, 400.0),
                (16, -1.0), (32, -1.0)]
    if args.workload == "gemm":
        order = []
        for pair in args.gemm_shapes.split(","):
            h, m = (int(v) for v in pair.split(":"))
            order.append((f"gemm-h{h}-m{m}", "bf16", False, m))
    else:
        order = [("resnet50", "amp", True, 256), ("resnet50", "tf32", False, 128)]
        if args.tf32_first:
            order.reverse()
    for name, precision, channels_last, batch in order:
        if args.workload == "gemm":
            h = int(name.split("-h")[1].split("-")[0])
            train_step = gemm_layer_step(h, batch, args.gemm_repeat)
        else:
            train_step = resnet50_step(precision, channels_last, batch, name=name)
        main = torch.cuda.Stream()

        def steps(count):
            out = []
            with torch.cuda.stream(main):
                for _ in range(count):
                    t0 = time.perf_counter()
                    train_step()
                    main.synchronize()
                    out.append(time.perf_counter() - t0)
            return out

        steps(8)
        base = statistics.median(steps(args.steps))
        rows = []
        for channels, bus in settings:
            seconds = args.steps * base * 2.5 + 0.5
            launch(channels, bus, seconds)
            times = steps(args.steps)
            overlapped = not side.done        # the kernel was still in flight when the steps ended
            side.synchronize()
            moved = int(counter.get()[0]) * chunk * 16
            again = statistics.median(steps(args.steps // 2))
            base = (base + again) / 2
            step = statistics.median(times[2:])
            rows.append({"channels": channels, "linear_sm_share": channels / sms,
                         "bus_GBps_asked": None if bus < 0 else bus,
                         "bus_GBps_achieved": moved / seconds / 1e9, "kernel_seconds": seconds,
                         "kernel_outlived_steps": overlapped, "first_steps_s": times[:2], "step_s": step, "baseline_step_s": again,
                         "slowdown": step / again - 1})
            print(f"  {name} {precision}: {channels:2d} CTAs, bus {'unpaced' if bus < 0 else f'{bus:.0f} GB/s':>9} "
                  f"(achieved {moved / seconds / 1e9:6.1f} GB/s, HBM {3 * moved / seconds / 1e9:6.1f} GB/s): "
                  f"step {step * 1e3:.2f} ms vs {again * 1e3:.2f} ms, {100 * (step / again - 1):+.1f}%; first steps "
                  f"{times[0] * 1e3:.0f}, {times[1] * 1e3:.0f} ms; kernel in flight at the end: {overlapped}", flush=True)
        results["models"].append({"model": name, "precision": precision, "channels_last": channels_last,
                                  "batch": batch, "rows": rows})
        train_step = None   # the model, freed before the next one is built
        torch.cuda.empty_cache()
    write_json_atomically(args.output, results)
    print(f"-> {args.output}")


if __name__ == "__main__":
    main()
