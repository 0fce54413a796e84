"""A model's layer table as dtsim reads it (models/NAME.json), built one leaf module at a time.

Conventions (shared by every generator in this folder):
  * layers are listed in forward order, which for these models is also the order of
    model.parameters() (module registration order);
  * params: element counts of the module's parameter tensors, in registration order;
  * fwd_flops: forward FLOPs per sample = 2 x multiply-accumulates of the matrix products
    (convolutions, linear layers, attention score/context products).  Element-wise work
    (BatchNorm, LayerNorm, ReLU/GELU, residual adds, softmax, pooling, bias adds) counts 0;
  * activation_elems: output elements of the module per sample;
  * buffer_elems: BatchNorm running_mean + running_var (2 x C); num_batches_tracked (one int64
    per BatchNorm) is not counted;
  * block: layers sharing a block must stay on one pipeline stage (a residual branch or a sum of
    embeddings); a cut is valid only after the last layer of a block, and that layer's
    activation_elems is what crosses the cut.  Omitted when the block is the layer itself;
  * then (optional): the parameter-free operations the module's output goes through before the
    next layer, in order (what autograd saves for them: sim/strategies/saved_tensors.cpp):
    "relu_" (in-place ReLU), "relu", "add_" (in-place residual add), "add" (residual add into a new
    tensor), "dropout", "gelu", "gelu_tanh" (GELU, tanh approximation), "silu", "mul" (times the
    previous layer's output, SwiGLU), "tanh", "rotary" (rotary positions on a query or key
    projection: nothing large saved; its eager kernels are timed by dtsim's roofline);
  * input (optional): the layer whose output this one reads, when it is not the layer before it
    (a ResNet downsample reads its block's input; BERT's key and value read the query's input);
  * op (optional): which operation a pooling layer is, "max" or "avg"; "rms" on a layernorm that is
    an RMSNorm.
"""

import json


class LayerTable:
    def __init__(self, name, source, input_elems, arch=None):
        self.name = name
        self.source = source
        self.input_elems = input_elems
        self.arch = dict(arch or {})
        self.layers = []
        self._block = None

    def begin_block(self, block):
        """Layers added until end_block() belong to `block`."""
        self._block = block

    def end_block(self):
        self._block = None

    def add(self, name, kind, params, fwd_macs, activation_elems, buffer_elems=0, then=None, input=None,
            op=None):
        layer = {
            "name": name,
            "kind": kind,
            "params": [int(p) for p in params],
            "fwd_flops": int(2 * fwd_macs),
            "activation_elems": int(activation_elems),
            "buffer_elems": int(buffer_elems),
        }
        if self._block is not None and self._block != name:
            layer["block"] = self._block
        if then:
            layer["then"] = list(then)
        if input is not None:
            layer["input"] = input
        if op is not None:
            layer["op"] = op
        self.layers.append(layer)
        return layer

    # Totals, for the summary printed by the generator.
    def params(self):
        return sum(sum(layer["params"]) for layer in self.layers)

    def tensors(self):
        return sum(len(layer["params"]) for layer in self.layers)

    def fwd_flops(self):
        return sum(layer["fwd_flops"] for layer in self.layers)

    def to_json_text(self):
        """One layer per line, so diffs of the committed files stay readable."""
        head = {"name": self.name, "source": self.source, "input_elems": self.input_elems}
        lines = ["{"]
        for key, value in head.items():
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
        if self.arch:
            lines.append(f'  "arch": {json.dumps(self.arch)},')
        lines.append('  "layers": [')
        for i, layer in enumerate(self.layers):
            comma = "," if i + 1 < len(self.layers) else ""
            lines.append(f"    {json.dumps(layer)}{comma}")
        lines.append("  ]")
        lines.append("}")
        return "\n".join(lines) + "\n"
