#!/usr/bin/env python3
"""How much a training step slows while an NCCL-like kernel runs beside it, measured on one GPU.

    python3 calibration/bench/nccl_interference.py -o interference.json

dtsim models compute beside an AllReduce as losing (1 - m) x channels / SMs + m x 3 x bus bytes/s /
HBM bandwidth of its rate (sim/strategies/interference.hpp). This program checks both terms on a
real GPU without a second one: a stand-in for NCCL's kernel runs on its own stream with one CTA
per channel (512 threads, 128 KB of shared memory so that each holds an SM alone, as NCCL's blocks
do) and, per byte it "receives", reads two buffers and writes one (recvReduceSend's three HBM
touches), paced to a given bus rate with the GPU's global timer; torchvision ResNet-50 trains on
another stream meanwhile. Settings: channels 8..32, bus rate 0 (SMs held, no traffic) up to
unpaced. Each step time is the median of the steps run while the kernel was in flight; the
baseline is measured between settings. Needs torch, torchvision, cupy and a CUDA GPU.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--steps", type=int, default=24, help="training steps per setting")
    ap.add_argument("--tf32-first", action="store_true", help="measure the TF32 model before the AMP one")
    ap.add_argument("--buffer-mb", type=int, default=768, help="each of the kernel's three buffers (above L2)")
    args = ap.parse_args()
    try:
        import cupy
        import torch
        import torchvision  # noqa: F401 (checked here, used by resnet_training)
    except ImportError as e:
        sys.exit(f"nccl_interference.py: needs torch, torchvision and cupy ({e})")
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
    order = [("resnet50", "amp", True, 256), ("resnet50", "tf32", False, 128)]
    if args.tf32_first:
        order.reverse()
    for name, precision, channels_last, batch in order:
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
            rows.append({"channels": channels, "bus_GBps_asked": None if bus < 0 else bus,
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
