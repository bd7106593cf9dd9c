#!/usr/bin/env python3
"""The PyTorch peer of `dptrain bench --model resnet50` for scripts/gpu-check.sh: torchvision's
ResNet-50 trained on one synthetic batch with SGD (momentum 0.9), the same batch size, warm-up and
timed steps, each step ended by reading the loss back (as dptrain's steps are). bf16 runs under
autocast with channels-last tensors; fp32 runs with TF32 off, as dptrain's fp32 does. cuDNN's
autotuner is on (dptrain searches its algorithms too). Writes one JSON object in the field names of
dptrain's bench JSON, so the two sit side by side in bench.json."""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the script without a GPU")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()

    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    model = torchvision.models.resnet50(weights=None).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(device)

    rates = []
    for step in range(args.warmup + args.steps):
        begin = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        value = loss.item()  # waits for the step, as dptrain's loss read-back does
        seconds = time.perf_counter() - begin
        if step >= args.warmup:
            rates.append(args.batch_size / seconds)
        print(f"  step {step + 1:3d}{' (warm-up)' if step < args.warmup else '          '}  loss {value:.4f}"
              f"  {args.batch_size / seconds:.2f} img/s", flush=True)

    mean = sum(rates) / len(rates)
    spread = math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)) if len(rates) > 1 else 0.0
    result = {
        "model": "resnet50", "framework": "pytorch", "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "cudnn_version": torch.backends.cudnn.version() if on_gpu else None,
        "device": torch.cuda.get_device_name(device) if on_gpu else "cpu",
        "precision": args.precision, "batch_size": args.batch_size, "steps": args.steps, "warmup": args.warmup,
        "images_per_sec": mean, "images_per_sec_stderr": spread / math.sqrt(len(rates)),
        "images_per_sec_min": min(rates), "images_per_sec_max": max(rates),
    }
    if on_gpu:
        result["gpu_memory_peak_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
    with open(args.json, "w") as file:
        json.dump(result, file, indent=1)
    print(f"images/sec: {mean:.2f} +/- {result['images_per_sec_stderr']:.2f}")


if __name__ == "__main__":
    main()
