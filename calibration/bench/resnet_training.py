"""One training step of torchvision's ResNet-50 on one GPU, as the calibration programs time it:
SGD with momentum, cross-entropy, synthetic data already on the GPU; precision fp32, tf32 (TF32
matmuls and convolutions) or amp (float16 autocast + GradScaler); channels_last optional."""


def resnet50_step(precision, channels_last, batch, weight_decay=0.0, name="resnet50"):
    """Builds the model, optimizer and batch; returns a function that runs one step (not synchronised)."""
    import torch
    import torchvision
    dev = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = getattr(torchvision.models, name)(weights=None).to(dev).to(memory_format=fmt).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=weight_decay)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "amp")
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "amp"):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step
