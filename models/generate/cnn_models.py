"""Convolutional and small MLP models, per leaf module, from their architecture.

ResNet and VGG follow torchvision/models/resnet.py and vgg.py (torchvision 0.13+; the layer
structure is unchanged since 0.2): ResNet v1.5 (stride on the 3x3 conv of a Bottleneck), convs
without bias, BatchNorm with weight and bias; VGG convs and linears with bias.  ReLU (in-place)
and the residual add are folded into the BatchNorm before them; Dropout into its neighbour;
max/average pooling are layers of their own with no parameters (they change the activation size
a pipeline cut would send).
"""

from layer_table import LayerTable

IMAGE = 224
CLASSES = 1000


def conv_out(size, kernel, stride, pad):
    return (size + 2 * pad - kernel) // stride + 1


def add_conv(t, name, cin, cout, kernel, stride, pad, size, bias=False, then=None, input=None):
    out = conv_out(size, kernel, stride, pad)
    weight = cout * cin * kernel * kernel
    macs = weight * out * out
    t.add(name, "conv", [weight] + ([cout] if bias else []), macs, cout * out * out, then=then, input=input)
    return out


def add_bn(t, name, channels, size, then=None):
    t.add(name, "bn", [channels, channels], 0, channels * size * size, buffer_elems=2 * channels, then=then)


def add_linear(t, name, fan_in, fan_out, tokens=1, bias=True, then=None):
    params = [fan_in * fan_out] + ([fan_out] if bias else [])
    t.add(name, "linear", params, fan_in * fan_out * tokens, fan_out * tokens, then=then)


def add_pool(t, name, channels, size, op):
    t.add(name, "pool", [], 0, channels * size * size, op=op)


# The residual add and ReLU of a block are in place (torchvision's `out += identity; out =
# self.relu(out)`, ReLU(inplace=True)): "add_", "relu_" after the block's last layer.  With a
# downsample they are listed after downsample.1 (same size as bn3's output, which they overwrite).
RESIDUAL_END = ["add_", "relu_"]


def bottleneck(t, prefix, inplanes, planes, stride, size):
    """torchvision Bottleneck (expansion 4); returns the output spatial size."""
    block_input = t.layers[-1]["name"]
    down = stride != 1 or inplanes != planes * 4
    t.begin_block(prefix)
    add_conv(t, f"{prefix}.conv1", inplanes, planes, 1, 1, 0, size)
    add_bn(t, f"{prefix}.bn1", planes, size, then=["relu_"])
    out = add_conv(t, f"{prefix}.conv2", planes, planes, 3, stride, 1, size)
    add_bn(t, f"{prefix}.bn2", planes, out, then=["relu_"])
    add_conv(t, f"{prefix}.conv3", planes, planes * 4, 1, 1, 0, out)
    add_bn(t, f"{prefix}.bn3", planes * 4, out, then=None if down else RESIDUAL_END)
    if down:
        add_conv(t, f"{prefix}.downsample.0", inplanes, planes * 4, 1, stride, 0, size, input=block_input)
        add_bn(t, f"{prefix}.downsample.1", planes * 4, out, then=RESIDUAL_END)
    t.end_block()
    return out


def basic_block(t, prefix, inplanes, planes, stride, size):
    """torchvision BasicBlock (expansion 1)."""
    block_input = t.layers[-1]["name"]
    down = stride != 1 or inplanes != planes
    t.begin_block(prefix)
    out = add_conv(t, f"{prefix}.conv1", inplanes, planes, 3, stride, 1, size)
    add_bn(t, f"{prefix}.bn1", planes, out, then=["relu_"])
    add_conv(t, f"{prefix}.conv2", planes, planes, 3, 1, 1, out)
    add_bn(t, f"{prefix}.bn2", planes, out, then=None if down else RESIDUAL_END)
    if down:
        add_conv(t, f"{prefix}.downsample.0", inplanes, planes, 1, stride, 0, size, input=block_input)
        add_bn(t, f"{prefix}.downsample.1", planes, out, then=RESIDUAL_END)
    t.end_block()
    return out


def resnet(name, block_kind, blocks):
    expansion = 4 if block_kind == "bottleneck" else 1
    depth = sum(blocks) * (3 if expansion == 4 else 2) + 2
    t = LayerTable(
        name,
        f"torchvision.models.{name} (ResNet-{depth} v1.5: stride on the 3x3 conv; "
        f"{'Bottleneck' if expansion == 4 else 'BasicBlock'} blocks {blocks}), computed per leaf "
        "module from the architecture by models/generate/cnn_models.py for a 224x224 RGB image. "
        "fwd_flops = 2 x conv/fc multiply-accumulates (BN, ReLU, add, pooling count 0).",
        3 * IMAGE * IMAGE,
        {"image_size": IMAGE, "channels": 3, "classes": CLASSES},
    )
    size = add_conv(t, "conv1", 3, 64, 7, 2, 3, IMAGE)
    add_bn(t, "bn1", 64, size, then=["relu_"])
    size = conv_out(size, 3, 2, 1)
    add_pool(t, "maxpool", 64, size, "max")
    inplanes = 64
    for stage, count in enumerate(blocks):
        planes = 64 * 2**stage
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            make = bottleneck if expansion == 4 else basic_block
            size = make(t, f"layer{stage + 1}.{i}", inplanes, planes, stride, size)
            inplanes = planes * expansion
    add_pool(t, "avgpool", inplanes, 1, "avg")
    add_linear(t, "fc", inplanes, CLASSES)
    return t


VGG16_FEATURES = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
                  512, 512, 512, "M"]


def vgg16():
    t = LayerTable(
        "vgg16",
        "torchvision.models.vgg16 (configuration D, no BatchNorm: 13 3x3 convs with bias, "
        "5 max-pools, AdaptiveAvgPool 7x7, classifier Linear 25088-4096-4096-1000), computed per "
        "leaf module by models/generate/cnn_models.py for a 224x224 RGB image; ReLU and Dropout "
        "folded into the layer before them. fwd_flops = 2 x conv/linear multiply-accumulates.",
        3 * IMAGE * IMAGE,
        {"image_size": IMAGE, "channels": 3, "classes": CLASSES},
    )
    channels, size, index = 3, IMAGE, 0
    for item in VGG16_FEATURES:
        if item == "M":
            size = conv_out(size, 2, 2, 0)
            add_pool(t, f"features.{index}", channels, size, "max")
            index += 1
        else:
            size = add_conv(t, f"features.{index}", channels, item, 3, 1, 1, size, bias=True, then=["relu_"])
            channels = item
            index += 2  # conv, ReLU
    add_pool(t, "avgpool", channels, 7, "avg")
    add_linear(t, "classifier.0", channels * 7 * 7, 4096, then=["relu_", "dropout"])
    add_linear(t, "classifier.3", 4096, 4096, then=["relu_", "dropout"])
    add_linear(t, "classifier.6", 4096, CLASSES)
    return t


def toymodel():
    t = LayerTable(
        "toymodel",
        "ToyModel of the seed article 003 (PyTorch DDP tutorial): net1 = Linear(10, 10), "
        "relu = ReLU(), net2 = Linear(10, 5); one sample = 10 input features.",
        10,
        {"in_features": 10, "hidden": 10, "out_features": 5},
    )
    add_linear(t, "net1", 10, 10)
    t.add("relu", "activation", [], 0, 10)
    add_linear(t, "net2", 10, 5)
    return t


def simplemodel():
    t = LayerTable(
        "simplemodel",
        "SimpleModel of the seed article 002 (nn.DataParallel example): fc = Linear(input_dim, 1) "
        "with input_dim = n_dim = 10, followed by torch.sigmoid (functional, folded into fc); "
        "one sample = 10 input features.",
        10,
        {"in_features": 10, "out_features": 1},
    )
    add_linear(t, "fc", 10, 1)
    return t


def all_models():
    return [
        resnet("resnet18", "basic", [2, 2, 2, 2]),
        resnet("resnet50", "bottleneck", [3, 4, 6, 3]),
        resnet("resnet101", "bottleneck", [3, 4, 23, 3]),
        vgg16(),
        toymodel(),
        simplemodel(),
    ]
