#!/usr/bin/env python3
"""Per-layer forward/backward times of a dtsim model, measured on a GPU with PyTorch.

    python3 calibration/bench/profile_model.py resnet50 --batch 64 [--precision fp32|amp] -o prof.json

Builds the model whose layer table is models/NAME.json (torchvision for resnet*/vgg16, Hugging Face
transformers for bert-large*/gpt2*, the seed's ToyModel), times every module named in the table
with CUDA events in forward/backward hooks (median of --repeats iterations after --warmup), and
writes the dtsim-profile-model JSON that `dtsim calibrate` reads (schema: calibration/README.md).

Conventions, matching models/generate/README.md:
  * modules that are not in the table (in-place ReLU, Dropout, residual adds) are charged to the
    listed layer that ran just before them;
  * a transformer's "...core" layer (attention scores, softmax, x V) is the time of its parent
    attention module minus the listed children inside it.
Needs torch (and torchvision / transformers for those models) and a CUDA GPU; exits 3 without one.
"""
import argparse
import json
import os
import statistics
import sys

from bench_json import write_json_atomically


def build_model(name, table):
    import torch
    arch = table.get("arch", {})
    if name.startswith("resnet") or name == "vgg16":
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
        shape = (3, arch.get("image_size", 224), arch.get("image_size", 224))
        return model, lambda b: (torch.randn(b, *shape),)
    if name.startswith("bert"):
        from transformers import BertConfig, BertForPreTraining
        cfg = BertConfig(hidden_size=arch["hidden"], num_hidden_layers=arch["layers"],
                         num_attention_heads=arch["heads"], intermediate_size=arch["ffn"],
                         vocab_size=arch["vocab"], max_position_embeddings=arch["max_positions"])
        return BertForPreTraining(cfg), lambda b: (torch.randint(0, arch["vocab"], (b, arch["seq_len"])),)
    if name.startswith("gpt"):
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_embd=arch["hidden"], n_layer=arch["layers"], n_head=arch["heads"],
                         vocab_size=arch["vocab"], n_positions=arch["max_positions"])
        return GPT2LMHeadModel(cfg), lambda b: (torch.randint(0, arch["vocab"], (b, arch["seq_len"])),)
    if name == "toymodel":
        class ToyModel(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net1 = torch.nn.Linear(10, 10)
                self.relu = torch.nn.ReLU()
                self.net2 = torch.nn.Linear(10, 5)

            def forward(self, x):
                return self.net2(self.relu(self.net1(x)))
        return ToyModel(), lambda b: (torch.randn(b, 10),)
    raise SystemExit(f"profile_model.py: no PyTorch builder for model '{name}'")


def residual_forward(self, x):
    """torchvision's BasicBlock/Bottleneck forward with `out = out + identity` for `out += identity`."""
    convs = [n for n in ("conv1", "conv2", "conv3") if hasattr(self, n)]
    out = x
    for i, name in enumerate(convs):
        out = getattr(self, f"bn{i + 1}")(getattr(self, name)(out))
        if i + 1 < len(convs):
            out = self.relu(out)
    identity = x if self.downsample is None else self.downsample(x)
    return self.relu(out + identity)


def out_of_place(model):
    """Full backward hooks hand each module's output on as a view, and autograd refuses an in-place
    op on it (PyTorch 2.x): torchvision's ReLU(inplace=True) and its residual `out += identity`.
    The out-of-place forms run the same kernels on one more activation-sized buffer."""
    import types
    for module in model.modules():
        if getattr(module, "inplace", False) is True:
            module.inplace = False
        if type(module).__name__ in ("BasicBlock", "Bottleneck") and hasattr(module, "downsample"):
            module.forward = types.MethodType(residual_forward, module)


class LayerTimer:
    """CUDA events around every module: inclusive forward and backward times per call."""

    def __init__(self, model):
        import torch
        self.torch = torch
        self.events = []          # (module name, phase, start event, end event)
        self.order = []           # forward execution order of module names
        self.open = {}
        for name, module in model.named_modules():
            if name:
                module.register_forward_pre_hook(self._pre(name, "fwd"))
                module.register_forward_hook(self._post(name, "fwd"))
                module.register_full_backward_pre_hook(self._pre(name, "bwd"))
                module.register_full_backward_hook(self._post(name, "bwd"))

    def _pre(self, name, phase):
        def hook(*_):
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            self.open[(name, phase)] = ev
            if phase == "fwd":
                self.order.append(name)
        return hook

    def _post(self, name, phase):
        def hook(*_):
            end = self.torch.cuda.Event(enable_timing=True)
            end.record()
            start = self.open.pop((name, phase), None)
            if start is not None:
                self.events.append((name, phase, start, end))
        return hook

    def collect(self):
        self.torch.cuda.synchronize()
        times = {}
        for name, phase, start, end in self.events:
            times[(name, phase)] = times.get((name, phase), 0.0) + start.elapsed_time(end) * 1e-3
        order = list(dict.fromkeys(self.order))
        self.events, self.order = [], []
        return times, order


def per_layer(times, order, layer_names):
    """Inclusive module times -> the table's layers (unlisted leaves charged to the previous layer)."""
    listed = set(layer_names)
    out = {n: {"fwd": 0.0, "bwd": 0.0} for n in layer_names}
    for phase in ("fwd", "bwd"):
        last = None
        for module in order:
            if module in listed:
                last = module
                out[module][phase] += times.get((module, phase), 0.0)
            elif last is not None and not any(m.startswith(module + ".") for m in order):
                out[last][phase] += times.get((module, phase), 0.0)   # unlisted leaf
        for name in layer_names:
            if name.endswith(".core"):
                parent = name[: -len(".core")]
                children = [n for n in layer_names if n.startswith(parent + ".") and n != name]
                total = times.get((parent, phase), 0.0)
                out[name][phase] = max(0.0, total - sum(out[c][phase] for c in children))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, required=True, help="per-GPU batch")
    ap.add_argument("--precision", choices=["fp32", "amp"], default="fp32")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--models-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "models"))
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.models_dir, args.model + ".json")) as f:
        table = json.load(f)
    names = [layer["name"] for layer in table["layers"]]
    try:
        import torch
    except ImportError:
        sys.exit("profile_model.py: PyTorch is not installed (pip install torch torchvision transformers)")
    if not torch.cuda.is_available():
        print("profile_model.py: no CUDA device; run this on the GPU machine you want to calibrate", file=sys.stderr)
        sys.exit(3)
    model, make_input = build_model(args.model, table)
    model = model.cuda().train()
    out_of_place(model)
    missing = [n for n in names if not n.endswith(".core") and n not in dict(model.named_modules())]
    if missing:
        sys.exit(f"profile_model.py: the PyTorch model has no module named {missing[:5]} (of models/{args.model}.json)")
    timer = LayerTimer(model)
    inputs = [x.cuda() for x in make_input(args.batch)]
    samples = []
    for it in range(args.warmup + args.repeats):
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.precision == "amp"):
            out = model(*inputs)
            logits = out if torch.is_tensor(out) else out[0]
            loss = logits.float().sum()
        loss.backward()
        model.zero_grad(set_to_none=True)
        times, order = timer.collect()
        if it >= args.warmup:
            samples.append(per_layer(times, order, names))
    layers = []
    for n in names:
        fwd = [s[n]["fwd"] for s in samples]
        bwd = [s[n]["bwd"] for s in samples]
        layers.append({"name": n, "fwd_s": statistics.median(fwd), "bwd_s": statistics.median(bwd),
                       "fwd_spread_s": max(fwd) - min(fwd), "bwd_spread_s": max(bwd) - min(bwd)})
    doc = {"tool": "dtsim-profile-model", "schema_version": 1,
           "gpu": {"name": torch.cuda.get_device_name()},
           "settings": {"repeats": args.repeats, "warmup": args.warmup, "statistic": "median",
                        "torch": torch.__version__},
           "model": {"name": args.model, "batch": args.batch, "precision": args.precision,
                     "source": "PyTorch module hooks + CUDA events", "layers": layers}}
    write_json_atomically(args.output, doc)
    print(f"{args.model}: batch {args.batch}, forward {sum(l['fwd_s'] for l in layers)*1e3:.2f} ms, "
          f"backward {sum(l['bwd_s'] for l in layers)*1e3:.2f} ms -> {args.output}")


if __name__ == "__main__":
    main()
