#!/usr/bin/env python3
"""Host-side costs of PyTorch training on one GPU machine, measured: the parameters that dtsim's
input-pipeline and DataParallel models otherwise take from estimates.

    python3 calibration/bench/host_costs.py -o host_costs.json [--only loader,dp,train]
    python3 calibration/bench/host_costs.py -o host_loadcurve.json --only loadcurve

loader  ImageNet-style JPEG samples through torchvision's ImageFolder pipeline (PIL decode,
        RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize) on one core, step by
        step, and torch.utils.data.DataLoader throughput with 1..N worker processes (pin_memory
        when a GPU is there). The JPEGs are made from the photographs that scikit-image ships
        (astronaut, chelsea, coffee, ...), cropped to ImageNet's typical sizes and saved at quality
        90, so their entropy is a photograph's; the file sizes and pixel counts are reported
        beside the times. Without scikit-image, smooth synthetic images are used and it says so.
dp      the Python costs of nn.DataParallel on one GPU: replicate() per module per replica,
        the host time of a forward (kernel launches, batch 1 so the GPU never waits for nothing)
        per layer of models/resnet50.json, the same under parallel_apply with k threads (the
        GIL's serialisation), and the host time of backward.
train   one-GPU ResNet-50 training throughput (SGD, cross-entropy, synthetic data already on the
        GPU) at fp32, TF32 and AMP (float16 autocast + GradScaler, channels_last as NVIDIA's
        DeepLearningExamples run it).
loadcurve (not in the default parts) the host's load curve: k processes (k = 1, 2, 4, ... past the
        core count) each run the loader part's decode + augment loop over the same JPEGs at the same
        time, for a fixed window after a warm-up; each reports its samples, wall and CPU time and
        context switches. Once with the host otherwise idle, once with a ResNet-50 AMP training
        process (resnet_training.resnet50_step, channels_last, batch 256, synchronised every step)
        running beside them throughout, whose step times in each window are kept too. With the
        CPU's facts (cpu_count, affinity, model, threads per core, cgroup quota) and MHz samples.

Every timing is the median of repeated samples; min and max are kept. Needs torch and torchvision;
the dp and train parts need a CUDA GPU (skipped without one, and the JSON says so).
"""
import argparse
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time

from bench_json import write_json_atomically
from resnet_training import resnet50_step

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "models")


def stats(samples):
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


def machine():
    import torch
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
            "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info["gpu"] = {"name": p.name, "sm_count": p.multi_processor_count,
                       "memory_GiB": round(p.total_memory / 2**30, 1), "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version()}
    try:
        import torchvision
        info["torchvision"] = torchvision.__version__
        import PIL
        info["pillow"] = PIL.__version__
    except ImportError:
        pass
    return info


# ---------------------------------------------------------------------------------------------
# loader


def photographs():
    """RGB photographs bundled with scikit-image (no download), or smooth synthetic images."""
    from PIL import Image
    try:
        from skimage import data
        bundled = set(os.listdir(os.path.dirname(data.__file__)))   # never trigger a download
        names = [("astronaut", "astronaut.png"), ("chelsea", "chelsea.png"), ("coffee", "coffee.png"),
                 ("rocket", "rocket.jpg"), ("hubble_deep_field", "hubble_deep_field.jpg"),
                 ("immunohistochemistry", "ihc.png"), ("retina", "retina.jpg"), ("motorcycle_left", "motorcycle_left.png")]
        out = []
        for n, file in names:
            if file not in bundled:
                continue
            try:
                a = getattr(data, n)()
            except Exception:   # noqa: BLE001 (a release without it)
                continue
            if a.ndim == 3 and a.shape[2] >= 3:
                out.append((n, Image.fromarray(a[:, :, :3])))
        if len(out) >= 3:
            return out, "scikit-image photographs: " + ", ".join(n for n, _ in out)
    except ImportError:
        pass
    import random
    rnd = random.Random(1)
    out = []
    for k in range(6):
        im = Image.effect_noise((1024, 768), 64).convert("RGB")
        from PIL import ImageFilter
        im = im.filter(ImageFilter.GaussianBlur(rnd.uniform(1.0, 3.0)))
        out.append((f"synthetic{k}", im))
    return out, "synthetic blurred noise (scikit-image missing)"


def make_jpegs(root, count, quality, target_bytes):
    """count JPEGs of ImageNet's usual shapes (500 x 375, 375 x 500, 500 x 333, ...: Flickr's 500-pixel
    long side) cut from photographs. With target_bytes, sensor-like grain (Gaussian, sigma 0..48
    levels) is added until a file reaches target_bytes * its pixels / ImageNet's mean pixels: the
    entropy decoder's work follows the compressed bits, and ILSVRC2012's training JPEGs average
    about 108 KB (the 138 GB ILSVRC2012_img_train.tar over 1,281,167 files)."""
    import random
    import numpy as np
    from PIL import Image
    sources, kind = photographs()
    rnd = random.Random(7)
    noise = np.random.default_rng(7)
    shapes = [(500, 375), (375, 500), (500, 333), (500, 400), (333, 500)]
    mean_pixels = statistics.mean(w * h for w, h in shapes)
    cls = os.path.join(root, "n00000000")
    os.makedirs(cls, exist_ok=True)
    sizes, pixels, grains = [], [], []
    for i in range(count):
        name, src = sources[i % len(sources)]
        w, h = shapes[i % len(shapes)]
        scale = max(w / src.width, h / src.height) * rnd.uniform(1.0, 1.6)
        im = src.resize((max(w, int(src.width * scale) + 1), max(h, int(src.height * scale) + 1)), Image.BILINEAR)
        x, y = rnd.randint(0, im.width - w), rnd.randint(0, im.height - h)
        im = im.crop((x, y, x + w, y + h))
        if rnd.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        base = np.asarray(im, dtype=np.float32)
        for sigma in ((0, 2, 4, 6, 8, 12, 16, 24, 32, 48) if target_bytes else (0,)):
            grain = base + noise.normal(0.0, sigma, base.shape) if sigma else base
            buf = io.BytesIO()
            Image.fromarray(np.clip(grain, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=quality)
            if not target_bytes or buf.tell() >= target_bytes * w * h / mean_pixels:
                break
        path = os.path.join(cls, f"img{i:04d}.JPEG")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        sizes.append(buf.tell())
        pixels.append(w * h)
        grains.append(sigma)
    return {"files": count, "source": kind, "quality": quality, "target_mean_bytes": target_bytes,
            "grain_sigma_median": statistics.median(grains),
            "mean_bytes": statistics.mean(sizes), "mean_pixels": statistics.mean(pixels)}


def imagenet_transform():
    import torchvision.transforms as T
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])


class Repeated:
    """A dataset of `length` samples cycling over an ImageFolder (files stay in the page cache)."""

    def __init__(self, folder, length):
        self.folder, self.length = folder, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.folder[i % len(self.folder)]


def measure_loader(args, doc):
    import torch
    import torchvision
    import torchvision.transforms as T
    from PIL import Image
    torch.set_num_threads(1)   # DataLoader workers run with one intra-op thread
    root = tempfile.mkdtemp(prefix="dtsim-jpeg-")
    files = make_jpegs(root, args.jpegs, 90, args.jpeg_bytes)
    plain_root = tempfile.mkdtemp(prefix="dtsim-jpeg-plain-")
    plain_files = make_jpegs(plain_root, args.jpegs, 90, None)
    folder = torchvision.datasets.ImageFolder(root, transform=imagenet_transform())
    paths = [p for p, _ in folder.samples]
    for p in paths:                        # page cache, as a second epoch finds it
        with open(p, "rb") as f:
            f.read()
    # Step by step, one core: what a worker does per sample.
    crop, flip = T.RandomResizedCrop(224), T.RandomHorizontalFlip()
    to_tensor = T.ToTensor()
    norm = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    steps = {"read_decode": [], "random_resized_crop": [], "flip_to_tensor_normalize": [], "whole_getitem": []}
    for rep in range(args.loader_passes):
        t = {k: 0.0 for k in steps}
        for p in paths:
            t0 = time.perf_counter()
            with open(p, "rb") as f:
                im = Image.open(f).convert("RGB")
            t1 = time.perf_counter()
            im = crop(im)
            t2 = time.perf_counter()
            x = norm(to_tensor(flip(im)))
            t3 = time.perf_counter()
            t["read_decode"] += t1 - t0
            t["random_resized_crop"] += t2 - t1
            t["flip_to_tensor_normalize"] += t3 - t2
        t0 = time.perf_counter()
        for i in range(len(folder)):
            folder[i]
        t["whole_getitem"] = time.perf_counter() - t0
        for k in steps:
            steps[k].append(t[k] / len(paths) * 1e3)
    # The collate of a batch (torch.stack into one tensor), per sample.
    batch = [folder[i % len(folder)] for i in range(args.loader_batch)]
    collate = []
    for _ in range(5):
        t0 = time.perf_counter()
        torch.utils.data.default_collate(batch)
        collate.append((time.perf_counter() - t0) / len(batch) * 1e3)
    per_sample = {k: stats(v) for k, v in steps.items()}
    # The same pipeline on the photographs without grain (fewer compressed bits per pixel).
    plain = torchvision.datasets.ImageFolder(plain_root, transform=imagenet_transform())
    plain_ms = []
    for _ in range(args.loader_passes):
        t0 = time.perf_counter()
        for i in range(len(plain)):
            plain[i]
        plain_ms.append((time.perf_counter() - t0) / len(plain) * 1e3)
    plain_files["whole_getitem_ms"] = stats(plain_ms)
    per_sample["collate"] = stats(collate)
    # DataLoader throughput by worker count.
    pin = torch.cuda.is_available()
    workers = [w for w in (1, 2, 4, 8, 16, 32) if w <= max(1, os.cpu_count())]
    by_workers = []
    single_ms = per_sample["whole_getitem"]["median"]
    for w in workers:
        # About args.loader_seconds of work at the one-core rate, at least 4 batches per worker.
        n = max(4 * w * args.loader_batch, int(args.loader_seconds * w / (single_ms * 1e-3)))
        n = (n // args.loader_batch + 1) * args.loader_batch
        ds = Repeated(folder, n + w * 2 * args.loader_batch)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.loader_batch, num_workers=w, pin_memory=pin,
                                             persistent_workers=False, prefetch_factor=2)
        it = iter(loader)
        for _ in range(w):                 # workers started and each has delivered a batch
            next(it)
        t0 = time.perf_counter()
        got = 0
        for x, _ in it:
            got += x.shape[0]
            if got >= n:
                break
        dt = time.perf_counter() - t0
        del it, loader
        by_workers.append({"workers": w, "samples": got, "seconds": dt, "samples_per_s": got / dt,
                           "ms_per_sample_per_worker": dt / got * w * 1e3})
        print(f"  loader: {w:2d} workers {got / dt:8.1f} samples/s ({dt / got * w * 1e3:.2f} ms/sample/worker)")
    doc["loader"] = {"images": files, "images_without_grain": plain_files, "transform": "RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize",
                     "torch_threads": 1, "per_sample_ms": per_sample,
                     "dataloader": {"batch": args.loader_batch, "pin_memory": pin, "by_workers": by_workers}}
    print(f"  loader: {single_ms:.2f} ms per sample on one core "
          f"(decode {per_sample['read_decode']['median']:.2f}, crop {per_sample['random_resized_crop']['median']:.2f}, "
          f"tensor {per_sample['flip_to_tensor_normalize']['median']:.2f}, collate {per_sample['collate']['median']:.3f}); "
          f"JPEGs {files['mean_bytes'] / 1e3:.0f} KB, {files['mean_pixels'] / 1e3:.0f} kpixel; without grain "
          f"{plain_files['mean_bytes'] / 1e3:.0f} KB: {plain_files['whole_getitem_ms']['median']:.2f} ms")


# ---------------------------------------------------------------------------------------------
# the host's load curve


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cpu_mhz():
    """The MHz that /proc/cpuinfo (and cpufreq, where the kernel has it) report, per CPU."""
    out = {}
    text = read_text("/proc/cpuinfo")
    if text:
        out["proc_cpuinfo"] = [float(line.split(":", 1)[1]) for line in text.splitlines() if line.startswith("cpu MHz")]
    freqs = []
    for cpu in range(os.cpu_count() or 0):
        v = read_text(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
        if v is None:
            break
        freqs.append(int(v) / 1e3)
    if freqs:
        out["scaling_cur_freq"] = freqs
    return out


def cpu_facts():
    facts = {"cpu_count": os.cpu_count()}
    try:
        facts["sched_getaffinity"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    text = read_text("/proc/cpuinfo") or ""
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = (x.strip() for x in line.split(":", 1))
            fields.setdefault(k, []).append(v)
    for k in ("model name", "siblings", "cpu cores", "physical id", "core id", "cpu family", "model", "stepping"):
        if k in fields:
            vals = sorted(set(fields[k]))
            facts[k.replace(" ", "_")] = vals if len(vals) > 1 else vals[0]
    if "flags" in fields:
        flags = set(fields["flags"][0].split())
        facts["flags_of_note"] = sorted(flags & {"hypervisor", "ht", "avx2", "avx512f", "avx512bw", "amx_tile"})
    siblings = set()
    for cpu in range(os.cpu_count() or 0):
        v = read_text(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        if v is not None:
            siblings.add(v.strip())
    if siblings:
        facts["thread_siblings_lists"] = sorted(siblings)
        facts["threads_per_core_from_sys"] = max(len(expand_cpu_list(x)) for x in siblings)
    for path in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/proc/self/cgroup", "/proc/loadavg",
                 "/sys/devices/system/cpu/smt/active", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                 "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"):
        v = read_text(path)
        if v is not None:
            facts[path] = v.strip()
    mem = read_text("/proc/meminfo")
    if mem:
        facts["MemTotal"] = mem.splitlines()[0].split(":", 1)[1].strip()
    facts["mhz_idle"] = cpu_mhz()
    return facts


def expand_cpu_list(text):
    out = []
    for part in text.replace("\n", "").split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def curve_worker(folder, index, start_at, warm_s, measure_s, queue):
    """One of k processes: the ImageFolder's __getitem__ in a loop, warm-up then the window."""
    import resource
    import torch
    torch.set_num_threads(1)
    try:
        n, i = len(folder), index * 13
        while time.monotonic() < start_at:
            time.sleep(0.0005)
        warm_end = start_at + warm_s
        while time.monotonic() < warm_end:
            folder[i % n]
            i += 1
        end = warm_end + measure_s
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0, c0 = time.monotonic(), time.process_time()
        count = 0
        while time.monotonic() < end:
            folder[i % n]
            i += 1
            count += 1
        t1, c1 = time.monotonic(), time.process_time()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        queue.put({"index": index, "samples": count, "wall_s": t1 - t0, "cpu_s": c1 - c0, "t0": t0, "t1": t1,
                   "voluntary_switches": r1.ru_nvcsw - r0.ru_nvcsw, "involuntary_switches": r1.ru_nivcsw - r0.ru_nivcsw,
                   "cpu": os.sched_getcpu() if hasattr(os, "sched_getcpu") else None})
    except Exception as e:   # noqa: BLE001
        queue.put({"index": index, "error": f"{type(e).__name__}: {e}"})


def proc_cpu_s(pid):
    text = read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    f = text.rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime


TRAINER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from resnet_training import resnet50_step
import torch
step = resnet50_step("amp", True, 256)
for _ in range(8):
    step()
torch.cuda.synchronize()
limit = time.monotonic() + float(sys.argv[3])
with open(sys.argv[2], "w", buffering=1) as f:
    f.write("ready %.6f\\n" % time.monotonic())
    while time.monotonic() < limit:
        step()
        torch.cuda.synchronize()
        f.write("%.6f\\n" % time.monotonic())
"""


def trainer_steps(path):
    times = []
    for line in (read_text(path) or "").splitlines():
        if line.startswith("ready"):
            continue
        try:
            times.append(float(line.split()[-1]))
        except ValueError:
            pass
    return times


def curve_point(folder, k, args, trainer=None):
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    start_at = time.monotonic() + 0.3 + 0.05 * k   # every process forked before the start
    procs = [ctx.Process(target=curve_worker, args=(folder, i, start_at, args.curve_warm, args.curve_seconds, queue),
                         daemon=True) for i in range(k)]
    for p in procs:
        p.start()
    win0 = start_at + args.curve_warm
    win1 = win0 + args.curve_seconds
    time.sleep(max(0.0, win0 - time.monotonic()))
    tr0 = proc_cpu_s(trainer.pid) if trainer else None
    time.sleep(max(0.0, win0 + args.curve_seconds / 2 - time.monotonic()))
    mhz = cpu_mhz()
    load = read_text("/proc/loadavg")
    time.sleep(max(0.0, win1 - time.monotonic()))
    tr1 = proc_cpu_s(trainer.pid) if trainer else None
    results = []
    deadline = time.monotonic() + 30
    while len(results) < k and time.monotonic() < deadline:
        try:
            results.append(queue.get(timeout=max(0.1, deadline - time.monotonic())))
        except Exception:   # noqa: BLE001 (queue.Empty: a worker died)
            break
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()
    ok = [r for r in results if "error" not in r and r["samples"] > 0]
    point = {"processes": k, "window": [win0, win1], "reported": len(results), "ok": len(ok),
             "errors": [r["error"] for r in results if "error" in r], "mhz_mid_window": mhz,
             "loadavg_mid_window": load.strip() if load else None, "per_process": results}
    if ok:
        per = [r["wall_s"] / r["samples"] * 1e3 for r in ok]
        point.update({"ms_per_sample_per_process": stats(per),
                      "cpu_ms_per_sample_per_process": stats([r["cpu_s"] / r["samples"] * 1e3 for r in ok]),
                      "cpu_utilisation_per_process": stats([r["cpu_s"] / r["wall_s"] for r in ok]),
                      "samples_per_s": sum(r["samples"] / r["wall_s"] for r in ok),
                      "involuntary_switches_per_process": stats([r["involuntary_switches"] for r in ok])})
    if trainer:
        steps = [t for t in trainer_steps(trainer.step_file) if win0 <= t <= win1]
        gaps = [b - a for a, b in zip(steps, steps[1:])]
        point["trainer"] = {"steps_in_window": len(steps), "cpu_s_in_window": (tr1 - tr0) if tr0 is not None and tr1 is not None else None,
                            "step_s": stats(gaps) if gaps else None,
                            "samples_per_s": 256 / statistics.median(gaps) if gaps else None,
                            "alive": trainer.poll() is None}
    return point


def print_point(label, pt):
    line = f"  loadcurve {label}: k={pt['processes']:2d} "
    if "ms_per_sample_per_process" in pt:
        m = pt["ms_per_sample_per_process"]
        line += (f"{m['median']:6.2f} ms/sample/process (min {m['min']:.2f}, max {m['max']:.2f}), "
                 f"{pt['samples_per_s']:7.1f} samples/s, cpu util {pt['cpu_utilisation_per_process']['median']:.2f}")
    elif pt["processes"]:
        line += f"no result ({pt['reported']} reported, errors {pt['errors']})"
    if "trainer" in pt:
        tr = pt["trainer"]
        line += (f"; trainer {tr['samples_per_s'] or 0:7.1f} samples/s, "
                 f"step {((tr['step_s'] or {}).get('median') or 0) * 1e3:.1f} ms, cpu {tr['cpu_s_in_window']}")
    print(line, flush=True)


def measure_loadcurve(args, doc):
    import subprocess
    import torch
    import torchvision
    torch.set_num_threads(1)
    res = {"method": "k processes forked from one parent, each looping ImageFolder.__getitem__ (PIL decode, "
                     "RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize) over the same JPEGs in the "
                     "page cache, one intra-op thread each, all started at one instant; a warm-up, then the window; "
                     "per process: samples, wall (time.monotonic) and CPU (time.process_time) seconds, context switches",
           "warm_s": args.curve_warm, "window_s": args.curve_seconds, "cpu": cpu_facts()}
    doc["loadcurve"] = res
    root = tempfile.mkdtemp(prefix="dtsim-jpeg-curve-")
    res["images"] = make_jpegs(root, args.jpegs, 90, args.jpeg_bytes)
    folder = torchvision.datasets.ImageFolder(root, transform=imagenet_transform())
    for p, _ in folder.samples:
        with open(p, "rb") as f:
            f.read()
    ks = [int(k) for k in args.curve_procs.split(",") if k]
    res["idle"] = []
    for k in ks:
        pt = curve_point(folder, k, args)
        res["idle"].append(pt)
        print_point("idle", pt)
        write_json_atomically(args.output, doc)   # a stop midway keeps the points taken
    if not torch.cuda.is_available():
        doc["not_measured"].append("loadcurve with training: no CUDA device")
        return
    step_file = os.path.join(root, "trainer-steps.txt")
    log = open(os.path.join(root, "trainer.log"), "w")
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, HERE, step_file, str(args.curve_trainer_limit)],
                               stdout=log, stderr=subprocess.STDOUT)
    trainer.step_file = step_file
    res["with_training"] = []
    res["trainer"] = {"what": "resnet50_step('amp', channels_last=True, batch=256): SGD momentum, float16 autocast + "
                              "GradScaler, synthetic data on the GPU; torch.cuda.synchronize() after every step",
                      "pid": trainer.pid}
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.curve_trainer_start and trainer.poll() is None:
            if (read_text(step_file) or "").startswith("ready"):
                break
            time.sleep(0.2)
        res["trainer"]["start_s"] = round(time.monotonic() - t0, 1)
        if trainer.poll() is not None or not (read_text(step_file) or "").startswith("ready"):
            log.flush()
            tail = (read_text(os.path.join(root, "trainer.log")) or "")[-2000:]
            res["trainer"]["error"] = f"not running (exit {trainer.poll()}): {tail}"
            doc["not_measured"].append("loadcurve with training: the trainer did not start")
            print(f"  loadcurve: trainer failed: {tail}", file=sys.stderr)
            return
        for k in [0] + ks:   # k = 0: the trainer alone, as the baseline
            pt = curve_point(folder, k, args, trainer)
            res["with_training"].append(pt)
            print_point("with training", pt)
            write_json_atomically(args.output, doc)
    finally:
        if trainer.poll() is None:
            trainer.terminate()
            try:
                trainer.wait(timeout=15)
            except subprocess.TimeoutExpired:
                trainer.kill()
        log.close()
        res["trainer"]["exit_code"] = trainer.poll()
        res["trainer"]["log_tail"] = (read_text(os.path.join(root, "trainer.log")) or "")[-1500:]
        res["cpu"]["mhz_end"] = cpu_mhz()


# ---------------------------------------------------------------------------------------------
# DataParallel's host costs


def resnet50_layers():
    with open(os.path.join(MODELS, "resnet50.json")) as f:
        return len(json.load(f)["layers"])


def host_time(fn, repeats, sync):
    """Host seconds of fn() (the GPU drained before each call, not after)."""
    out = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def measure_dp(args, doc):
    import torch
    import torchvision
    from torch.nn.parallel import parallel_apply, replicate
    dev = torch.device("cuda", 0)
    sync = torch.cuda.synchronize
    model = torchvision.models.resnet50(weights=None).to(dev).train()
    modules = len(list(model.modules()))
    leaves = sum(1 for m in model.modules() if not list(m.children()))
    layers = resnet50_layers()
    x1 = torch.randn(1, 3, 224, 224, device=dev)
    res = {"model": "resnet50", "modules": modules, "leaf_modules": leaves, "table_layers": layers}
    for _ in range(5):
        replicate(model, [0])
    rep = host_time(lambda: replicate(model, [0]), args.dp_repeats, sync)
    res["replicate_one_replica_s"] = stats(rep)
    res["replicate_us_per_module"] = statistics.median(rep) / modules * 1e6
    try:   # a second replica on the same GPU, if broadcast_coalesced accepts it: the per-replica slope
        for _ in range(3):
            replicate(model, [0, 0])
        rep2 = host_time(lambda: replicate(model, [0, 0]), args.dp_repeats, sync)
        res["replicate_two_replicas_s"] = stats(rep2)
    except Exception as e:   # noqa: BLE001 (reported, not fatal)
        res["replicate_two_replicas_s"] = f"not measured: {type(e).__name__}: {e}"
    for precision in ("fp32", "amp"):
        with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "amp"):
            for _ in range(10):
                model(x1)
            fwd = host_time(lambda: model(x1), args.dp_repeats, sync)
        res[f"forward_host_{precision}_s"] = stats(fwd)
        res[f"forward_host_{precision}_us_per_layer"] = statistics.median(fwd) / layers * 1e6

        def fwd_bwd():
            with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "amp"):
                loss = model(x1).float().sum()
            t0 = time.perf_counter()
            loss.backward()
            return time.perf_counter() - t0
        for _ in range(5):
            fwd_bwd()
        bwd = []
        for _ in range(args.dp_repeats):
            sync()
            bwd.append(fwd_bwd())
        model.zero_grad(set_to_none=True)
        res[f"backward_host_{precision}_s"] = stats(bwd)
        res[f"backward_host_{precision}_us_per_layer"] = statistics.median(bwd) / layers * 1e6
    # parallel_apply: k Python threads each running a forward (of the same replica, on GPU 0).
    # With the GIL the host time grows with k; the slope per replica per layer is the lane's cost.
    pa = []
    for k in (1, 2, 4, 8):
        mods, ins = [model] * k, [(x1,)] * k
        for _ in range(3):
            parallel_apply(mods, ins, devices=[dev] * k)
        t = host_time(lambda: parallel_apply(mods, ins, devices=[dev] * k), args.dp_repeats, sync)
        pa.append({"threads": k, "host_s": stats(t), "us_per_layer_per_replica": statistics.median(t) / k / layers * 1e6})
        print(f"  dp: parallel_apply x{k}: {statistics.median(t) * 1e3:.2f} ms host "
              f"({statistics.median(t) / k / layers * 1e6:.1f} us per layer per replica)")
    res["parallel_apply"] = pa
    doc["dp"] = res
    print(f"  dp: replicate {res['replicate_us_per_module']:.1f} us per module ({modules} modules); forward host "
          f"{res['forward_host_fp32_us_per_layer']:.1f} us/layer fp32, {res['forward_host_amp_us_per_layer']:.1f} amp "
          f"({layers} layers); backward host {res['backward_host_fp32_us_per_layer']:.1f} us/layer fp32")


# ---------------------------------------------------------------------------------------------
# one-GPU training throughput


def measure_train(args, doc):
    import torch
    runs = []
    settings = [("amp", True, 256), ("amp", False, 256), ("tf32", False, 256), ("fp32", False, 128)]
    for precision, channels_last, batch in settings:
        step = resnet50_step(precision, channels_last, batch, weight_decay=5e-5)
        for _ in range(args.train_warmup):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.train_iters):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        runs.append({"precision": precision, "channels_last": channels_last, "batch": batch,
                     "step_s": stats(times), "samples_per_s": batch / med,
                     "peak_memory_GiB": round(torch.cuda.max_memory_allocated() / 2**30, 2)})
        print(f"  train: resnet50 {precision:4s} {'NHWC' if channels_last else 'NCHW'} batch {batch}: "
              f"{batch / med:7.1f} samples/s ({med * 1e3:.1f} ms/step)")
        step = None   # the model, freed before the next setting's
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    doc["train"] = {"model": "resnet50 (torchvision)", "optimizer": "SGD momentum 0.9",
                    "data": "synthetic, on the GPU (no loader)", "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--only", default="loader,dp,train",
                    help="comma-separated parts: loader, dp, train, loadcurve (not a default one)")
    ap.add_argument("--jpegs", type=int, default=96, help="JPEG files made for the loader part")
    ap.add_argument("--jpeg-bytes", type=float, default=108e3,
                    help="mean JPEG size to reach with grain (default ILSVRC2012 train's 108 KB)")
    ap.add_argument("--loader-passes", type=int, default=5)
    ap.add_argument("--loader-batch", type=int, default=64)
    ap.add_argument("--loader-seconds", type=float, default=2.5, help="work per worker count, at one core's rate")
    ap.add_argument("--dp-repeats", type=int, default=30)
    ap.add_argument("--train-warmup", type=int, default=10)
    ap.add_argument("--train-iters", type=int, default=30)
    ap.add_argument("--curve-procs", default="1,2,4,8,12,16,24", help="loadcurve: process counts")
    ap.add_argument("--curve-warm", type=float, default=1.0, help="loadcurve: warm-up seconds per point")
    ap.add_argument("--curve-seconds", type=float, default=4.0, help="loadcurve: measured seconds per point")
    ap.add_argument("--curve-trainer-start", type=float, default=90.0, help="loadcurve: seconds the trainer may take to start")
    ap.add_argument("--curve-trainer-limit", type=float, default=150.0, help="loadcurve: the trainer stops itself after this")
    args = ap.parse_args()
    parts = [p for p in args.only.split(",") if p]
    unknown = [p for p in parts if p not in ("loader", "dp", "train", "loadcurve")]
    if unknown:
        sys.exit(f"host_costs.py: unknown part(s) {unknown}; use loader, dp, train, loadcurve")
    try:
        import torch
        import torchvision  # noqa: F401 (checked here, used by the parts)
    except ImportError:
        sys.exit("host_costs.py: needs torch and torchvision")
    doc = {"tool": "dtsim-host-costs", "schema_version": 1, "machine": machine(), "not_measured": []}
    for part, fn in (("loader", measure_loader), ("dp", measure_dp), ("train", measure_train),
                     ("loadcurve", measure_loadcurve)):
        if part not in parts:
            continue
        if part not in ("loader", "loadcurve") and not torch.cuda.is_available():
            doc["not_measured"].append(f"{part}: no CUDA device")
            continue
        print(f"{part}:", flush=True)
        try:
            fn(args, doc)
        except Exception as e:   # noqa: BLE001 (one part failing keeps the others)
            doc["not_measured"].append(f"{part}: {type(e).__name__}: {e}")
            print(f"  {part}: failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.stdout.flush()
        write_json_atomically(args.output, doc)
    print(f"-> {args.output}")


if __name__ == "__main__":
    main()
