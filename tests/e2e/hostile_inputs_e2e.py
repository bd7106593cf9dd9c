#!/usr/bin/env python3
"""End-to-end: the second round of hostile inputs (issue 29), made here, against the real `dptrain`.

Options out of range or not numbers, on every subcommand that takes them, must be refused in words
("--epochs: must be at least 1, not 0"), never with CLI11's 309-digit bounds; absurd sizes (a batch of
10^9, report results claiming 10^12-pixel images, 3e9 classes or 2^32+1 GPUs) must be refused naming
the option or the field before anything is built; a file-size limit during a checkpoint or a
conversion must give one error naming the file and "File too large", leave no .tmp behind and keep
the previous checkpoint. Every run must end by exit code, never a signal, within its time limit.
Usage: hostile_inputs_e2e.py DPTRAIN"""
import glob, json, os, resource, signal, subprocess, sys, tempfile, shutil

dptrain = sys.argv[1]
work = tempfile.mkdtemp(prefix="dptrain_hostile_e2e_")
failures = []


def run(args, what, timeout=120, fsize=None):
    def limit():
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # dptrain itself must ignore it
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
    try:
        p = subprocess.run([dptrain] + args, capture_output=True, text=True, timeout=timeout, preexec_fn=limit,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        failures.append(f"{what}: no exit within {timeout} s")
        return None, ""
    if p.returncode < 0 or p.returncode > 125 and p.returncode != 105:
        failures.append(f"{what}: exit code {p.returncode} (a signal or a crash)\n{p.stderr[-2000:]}")
    return p.returncode, p.stdout + p.stderr


def refused(args, words, what, **kw):
    code, out = run(args, what, **kw)
    if code == 0:
        failures.append(f"{what}: accepted")
        return out
    lines = [l for l in out.splitlines() if l.strip()]
    if not any(all(w in l for w in words) for l in lines):
        failures.append(f"{what}: no line with {words}:\n{out[-2000:]}")
    if any(len(l) > 600 for l in lines):
        failures.append(f"{what}: a line of more than 600 characters (digits of a bound?):\n{out[-2000:]}")
    return out


def check(args, what):
    code, out = run(args, what, timeout=300)
    if code != 0:
        print(out)
        sys.exit(f"FAIL: {what} (exit {code})")


try:
    check(["data", "synth", f"{work}/src", "--classes", "3", "--per-class", "6", "--val-per-class", "3", "--size", "28"],
          "synth")
    check(["data", "convert", "imagenet", f"{work}/src", f"{work}/d", "--size", "28", "--shards", "2", "--val-shards",
           "1"], "convert")
    data = f"{work}/d"
    train = ["train", "--model", "lenet", "--data", data, "--log-every", "1"]

    # Class 6 and 2: options in words, numbers that are not finite refused by name.
    for option, value, words in [
        ("--epochs", "0", ["--epochs", "at least 1", "not 0"]),
        ("--steps", "-3", ["--steps", "at least 1"]),
        ("--batch-size", "0", ["--batch-size", "at least 1"]),
        ("--lr", "0", ["--lr", "above 0"]),
        ("--lr", "inf", ["--lr", "finite"]),
        ("--momentum", "nan", ["--momentum", "finite"]),
        ("--momentum", "1", ["--momentum", "below 1"]),
        ("--weight-decay", "nan", ["--weight-decay", "finite"]),
        ("--weight-decay", "-1e-4", ["--weight-decay", "at least 0"]),
        ("--label-smoothing", "1", ["--label-smoothing", "below 1"]),
        ("--warmup-epochs", "-1", ["--warmup-epochs", "at least 0"]),
        ("--milestones", "nan", ["--milestones", "finite"]),
        ("--bucket-mb", "0", ["--bucket-mb", "above 0"]),
    ]:
        refused(train + ["--steps", "1", option, value] if option != "--steps" else train + [option, value],
                words, f"train {option} {value}")
    refused(["eval", "--checkpoint", work, "--data", data, "--batch-size", "0"], ["--batch-size", "at least 1"],
            "eval --batch-size 0")
    refused(["bench", "--model", "lenet", "--classes", "1"], ["--classes", "from 2 to 1048576"], "bench --classes 1")
    refused(["inspect", "--model", "lenet", "--image-size", "0"], ["--image-size", "at least 1"],
            "inspect --image-size 0")
    refused(["predict", "--model", "lenet", "--images-per-second", "100", "--gpus", "0"], ["--gpus", "from 1"],
            "predict --gpus 0")
    refused(["predict", "--model", "lenet", "--images-per-second", "nan"], ["--images-per-second", "finite"],
            "predict --images-per-second nan")
    refused(["data", "synth", f"{work}/s2", "--classes", "1", "--per-class", "1", "--size", "28"],
            ["--classes", "from 2 to 100000"], "data synth --classes 1")

    # Class 5: a batch of 10^9 is compared with the split before the net is built.
    refused(train + ["--steps", "1", "--batch-size", "1000000000"], ["fewer than one global batch", "1000000000"],
            "train --batch-size 1000000000", timeout=60)
    # Report inputs that claim absurd sizes: refused naming the field, never truncated.
    for field, value in [("image_size", 1e12), ("classes", 3e9), ("gpus", 4294967297), ("world_size", 4294967297),
                         ("gpus", -1), ("classes", float("nan"))]:
        result = {"model": "lenet", "images_per_sec": 100.0, "batch_size": 8, "world_size": 1}
        result[field] = value
        path = f"{work}/r_{field}.json"
        with open(path, "w") as f:
            f.write(json.dumps(result).replace("NaN", "1e999") if value != value else json.dumps(result))
        refused(["report", path], [field, path], f"report {field} {value}")

    # Class 1: a file-size limit during a checkpoint and a conversion (EFBIG), named, nothing lost.
    ck = f"{work}/ck"
    check(train + ["--steps", "1", "--batch-size", "4", "--lr", "0.01", "--checkpoint-dir", ck, "--checkpoint-every",
                   "1"], "a first checkpoint")
    first = open(f"{ck}/latest").read()
    # Class 3: the validation split (9 samples) scored at batch sizes that do not divide it, and one
    # far larger than it, gives the same loss and top-k to the printed digits.
    scores = {}
    for batch in ("1", "2", "4", "7", "9", "64", "1000000000"):
        code, out = run(["eval", "--checkpoint", ck, "--data", data, "--batch-size", batch, "--threads", "1"],
                        f"eval --batch-size {batch}", timeout=120)
        scores[batch] = [l.split()[-1] for l in out.splitlines() if l.split()[:1] in (["loss"], ["top-1"], ["top-5"])]
        if code != 0 or len(scores[batch]) != 3:
            failures.append(f"eval --batch-size {batch}: exit {code}:\n{out[-2000:]}")
    if len(set(map(tuple, scores.values()))) != 1:
        failures.append(f"eval scores differ with the batch size: {scores}")
    size = os.path.getsize(glob.glob(f"{ck}/ckpt-*.h5")[0])
    for limit in (4096, size // 2):
        refused(train + ["--steps", "2", "--batch-size", "4", "--lr", "0.01", "--checkpoint-dir", ck, "--resume", "auto", "--reschedule",
                         "--checkpoint-every", "1"], ["ckpt-000000002.h5.tmp", "File too large"],
                f"checkpoint under a {limit}-byte file limit", fsize=limit)
        if glob.glob(f"{ck}/*.tmp"):
            failures.append(f"checkpoint under a {limit}-byte limit: a temporary is left: {glob.glob(ck + '/*.tmp')}")
        if open(f"{ck}/latest").read() != first:
            failures.append(f"checkpoint under a {limit}-byte limit: latest changed")
    check(["inspect", ck], "the previous checkpoint is intact")
    refused(["data", "convert", "imagenet", f"{work}/src", f"{work}/d2", "--size", "28", "--shards", "2"],
            [".h5.tmp", "File too large"], "convert under a file limit", fsize=2048)
    if glob.glob(f"{work}/d2/*.tmp"):
        failures.append(f"convert under a file limit: a temporary is left: {glob.glob(work + '/d2/*.tmp')}")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("PASS")
