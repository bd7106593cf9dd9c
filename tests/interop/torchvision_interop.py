#!/usr/bin/env python3
"""Interop test (CTest label interop): dptrain's models against torchvision's, both directions.

  torchvision -> dptrain: a torchvision model with random weights and random batch-norm statistics is
  written to safetensors (by safetensors_py.py, not by dptrain), `dptrain import`ed, and
  `dptrain eval --images` must give torchvision's eval-mode logits on the same images.
  dptrain -> torchvision: the imported checkpoint is fine-tuned for 2 steps on a 4-class dataset
  (`train --resume --reset-classifier`), `dptrain export`ed, loaded strictly into a 4-class torchvision
  model, and torchvision's logits must be dptrain's.

Agreement: max |ours - torchvision| <= 1e-4 * max |torchvision|, torchvision computing in float64.
Exits 77 (CTest: skipped) when Debian's python3-torch and python3-torchvision are not installed.
Usage: torchvision_interop.py DPTRAIN MODEL WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_py  # noqa: E402

SKIP = 77
try:
    import numpy as np
    import torch
    import torchvision
except ImportError as error:
    print(f"SKIPPED: {error}; install python3-torch and python3-torchvision (scripts/install-deps.sh --test)")
    sys.exit(SKIP)

TOLERANCE = 1e-4
BATCH = 2


def torchvision_model(model, classes):
    m = torchvision.models
    if model == "resnet50":
        return m.resnet50(num_classes=classes), 224
    if model == "alexnet":
        return m.alexnet(num_classes=classes), 224
    if model == "inception-v3":
        return m.inception_v3(num_classes=classes, aux_logits=True, transform_input=False, init_weights=True), 299
    raise SystemExit(f"unknown model {model}")


def randomise(net, generator):
    """Batch norms with statistics and affine terms far from the identity, so that the running mean,
    the running variance, the scale and the shift all change the logits."""
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5, generator=generator)
                module.bias.normal_(0.0, 0.2, generator=generator)
                module.running_mean.normal_(0.0, 0.2, generator=generator)
                module.running_var.uniform_(0.5, 2.0, generator=generator)
                module.num_batches_tracked.fill_(7)
            elif isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)) and module.bias is not None:
                module.bias.normal_(0.0, 0.1, generator=generator)


def logits_of(net, images):
    net = net.double().eval()
    with torch.no_grad():
        return net(torch.from_numpy(images).double()).numpy()


def agree(what, ours, reference):
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} against torchvision's {reference.shape}"
    scale = float(np.abs(reference).max())
    error = float(np.abs(ours.astype(np.float64) - reference).max())
    print(f"{what}: max |difference| {error:.3g}, max |torchvision| {scale:.3g}, relative {error / scale:.3g}")
    assert scale > 0 and error <= TOLERANCE * scale, f"{what}: relative difference {error / scale:.3g} > {TOLERANCE}"


def run(*args):
    print("+ " + " ".join(args), flush=True)
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="")
    assert result.returncode == 0, f"exit {result.returncode}: {' '.join(args)}"
    return result.stdout


def dptrain_logits(dptrain, checkpoint, images_file, work, name):
    out = os.path.join(work, name)
    run(dptrain, "eval", "--checkpoint", checkpoint, "--images", images_file, "--logits", out)
    tensors, _ = safetensors_py.read(out)
    return tensors["logits"]


def main():
    dptrain, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.manual_seed(20261202)
    generator = torch.Generator().manual_seed(7)

    # torchvision -> dptrain
    reference, size = torchvision_model(model, 1000)
    randomise(reference, generator)
    reference.eval()
    weights = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
    safetensors_py.write(os.path.join(work, "torchvision.safetensors"), weights)
    images = torch.randn(BATCH, 3, size, size, generator=generator).numpy()
    images_file = os.path.join(work, "images.safetensors")
    safetensors_py.write(images_file, {"images": images})
    imported = os.path.join(work, "imported.h5")
    out = run(dptrain, "import", os.path.join(work, "torchvision.safetensors"), "--model", model, imported)
    assert "1000 classes" in out and "torchvision names" in out, out
    agree(f"{model} imported from torchvision", dptrain_logits(dptrain, imported, images_file, work, "l1.st"),
          logits_of(reference, images))

    # dptrain -> torchvision, after fine-tuning for another class count
    run(dptrain, "data", "synth", os.path.join(work, "src"), "--classes", "4", "--per-class", "2", "--size",
        str(size), "--val-per-class", "1")
    data = os.path.join(work, "data")
    run(dptrain, "data", "convert", "imagenet", os.path.join(work, "src"), data, "--size", str(size), "--shards",
        "1", "--val-shards", "1")
    checkpoints = os.path.join(work, "ckpt")
    out = run(dptrain, "train", "--model", model, "--data", data, "--resume", imported, "--reset-classifier",
              "--steps", "2", "--batch-size", str(BATCH), "--lr", "0.002", "--checkpoint-dir", checkpoints)
    assert "re-initialised the classifier" in out, out
    exported = os.path.join(work, "exported.safetensors")
    run(dptrain, "export", checkpoints, exported)
    tensors, metadata = safetensors_py.read(exported)
    assert metadata["model"] == model and metadata["classes"] == "4" and metadata["names"] == "torchvision", metadata
    assert metadata["image_size"] == str(size) and metadata["step"] == "2", metadata
    assert len(json.loads(metadata["mean"])) == 3 and len(json.loads(metadata["std"])) == 3, metadata
    assert len(json.loads(metadata["class_keys"])) == 4, metadata

    fine_tuned, _ = torchvision_model(model, 4)
    fine_tuned.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    moved = [k for k, v in tensors.items() if k in weights and v.shape == weights[k].shape and
             v.dtype.kind == "f" and not np.array_equal(v, weights[k])]
    assert len(moved) > len(tensors) // 2, f"only {len(moved)} of {len(tensors)} tensors changed in training"
    agree(f"{model} exported to torchvision", dptrain_logits(dptrain, checkpoints, images_file, work, "l2.st"),
          logits_of(fine_tuned, images))
    print(f"PASS {model}: both directions agree with torchvision")


if __name__ == "__main__":
    main()
