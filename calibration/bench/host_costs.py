#!/usr/bin/env python3
"""Host-side costs of PyTorch training on one GPU machine, measured: the parameters that dtsim's
input-pipeline and DataParallel models otherwise take from estimates.

    python3 calibration/bench/host_costs.py -o host_costs.json [--only loader,dp,train]

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
    ap.add_argument("--only", default="loader,dp,train", help="comma-separated parts: loader, dp, train")
    ap.add_argument("--jpegs", type=int, default=96, help="JPEG files made for the loader part")
    ap.add_argument("--jpeg-bytes", type=float, default=108e3,
                    help="mean JPEG size to reach with grain (default ILSVRC2012 train's 108 KB)")
    ap.add_argument("--loader-passes", type=int, default=5)
    ap.add_argument("--loader-batch", type=int, default=64)
    ap.add_argument("--loader-seconds", type=float, default=2.5, help="work per worker count, at one core's rate")
    ap.add_argument("--dp-repeats", type=int, default=30)
    ap.add_argument("--train-warmup", type=int, default=10)
    ap.add_argument("--train-iters", type=int, default=30)
    args = ap.parse_args()
    parts = [p for p in args.only.split(",") if p]
    unknown = [p for p in parts if p not in ("loader", "dp", "train")]
    if unknown:
        sys.exit(f"host_costs.py: unknown part(s) {unknown}; use loader, dp, train")
    try:
        import torch
        import torchvision  # noqa: F401 (checked here, used by the parts)
    except ImportError:
        sys.exit("host_costs.py: needs torch and torchvision")
    doc = {"tool": "dtsim-host-costs", "schema_version": 1, "machine": machine(), "not_measured": []}
    for part, fn in (("loader", measure_loader), ("dp", measure_dp), ("train", measure_train)):
        if part not in parts:
            continue
        if part != "loader" and not torch.cuda.is_available():
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
