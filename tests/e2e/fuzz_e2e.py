#!/usr/bin/env python3
"""End-to-end fuzz: the real `dptrain` on mutants of a small dataset and of a small checkpoint.

A seeded mutator flips bytes, truncates and zeroes blocks of one train shard (raw and JPEG) or of the
newest checkpoint; then `dptrain data verify`, `dptrain train --steps 1` and `train --resume auto`
run on each mutant. Every run must end with exit code 0 or 1 within its time limit, never by a signal,
and never use 2 GB of memory; exit code 1 must come with an error line naming the damaged file; a
damaged shard always fails `data verify` (its checksum); a damaged newest checkpoint never stops a
resume (the older one is taken, with a warning naming the file, when the mutant cannot be read).
The HDF5-level mutations (attributes turned into arrays, datasets replaced) run in process, in the
unit test unit_fuzz, which the asan preset runs too.
Usage: fuzz_e2e.py DPTRAIN [MUTANTS_PER_KIND]"""
import os, random, resource, shutil, subprocess, sys, tempfile

dptrain = sys.argv[1]
per_kind = int(sys.argv[2]) if len(sys.argv) > 2 else 12
LIMIT_BYTES = 2 << 30
work = tempfile.mkdtemp(prefix="dptrain_fuzz_e2e_")
failures = []
runs = 0


def run(args, what, timeout=120):
    """Runs dptrain; returns (code, stderr). A signal, a timeout or too much memory is a failure."""
    global runs
    runs += 1
    try:
        p = subprocess.run([dptrain] + args, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        failures.append(f"{what}: no exit within {timeout} s (a hang)")
        return None, ""
    if p.returncode not in (0, 1):
        failures.append(f"{what}: exit code {p.returncode} (a signal or a crash)\n{p.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if peak > LIMIT_BYTES:
        failures.append(f"{what}: a run used {peak >> 20} MB (limit 2048 MB)")
    return p.returncode, p.stderr


def expect_named(code, stderr, name, what):
    if code == 1 and not any("error" in line and name in line for line in stderr.splitlines()):
        failures.append(f"{what}: exit code 1 without an error line naming {name}:\n{stderr[-2000:]}")


def mutate(path, rng):
    data = bytearray(open(path, "rb").read())
    kind = rng.randrange(3)
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    elif kind == 1:
        del data[rng.randrange(len(data)):]
    else:
        start = rng.randrange(len(data))
        end = min(len(data), start + rng.randint(16, 4096))
        data[start:end] = bytes(end - start)
    open(path, "wb").write(bytes(data))


def same_contents(original, mutant):
    """True when h5diff reads both files and finds every object and attribute equal."""
    p = subprocess.run(["h5diff", original, mutant], capture_output=True, text=True)
    return p.returncode == 0


def check(cmd, what):
    code, err = run(cmd, what)
    if code != 0:
        print(err)
        sys.exit(f"FAIL: {what} (exit {code})")


try:
    check(["data", "synth", f"{work}/src", "--classes", "3", "--per-class", "4", "--val-per-class", "2", "--size", "28"], "synth")
    for encoding in ("raw", "jpeg"):
        check(["data", "convert", "imagenet", f"{work}/src", f"{work}/{encoding}", "--size", "28", "--shards", "2",
               "--val-shards", "1", "--encoding", encoding], f"convert {encoding}")
    train = ["train", "--model", "lenet", "--batch-size", "4", "--lr", "0.01", "--log-every", "1"]
    check(train + ["--data", f"{work}/raw", "--steps", "2", "--checkpoint-dir", f"{work}/ckpt", "--checkpoint-every", "1"],
          "the good checkpoints")
    rng = random.Random(2026)
    for encoding in ("raw", "jpeg"):
        for i in range(per_kind):
            mutant = f"{work}/m_{encoding}_{i}"
            shutil.copytree(f"{work}/{encoding}", mutant)
            shard = "train-00001-of-00002.h5"
            mutate(f"{mutant}/{shard}", rng)
            what = f"{encoding} shard mutant {i}"
            code, err = run(["data", "verify", mutant], what + ": data verify")
            # A mutation may land in bytes no object uses (the slack HDF5 leaves in its metadata
            # blocks): the shard is then not damaged, and h5diff finds it equal to the original.
            if code == 0 and not same_contents(f"{work}/{encoding}/{shard}", f"{mutant}/{shard}"):
                failures.append(f"{what}: data verify passed a damaged shard")
            expect_named(code, err, shard, what + ": data verify")
            code, err = run(train + ["--data", mutant, "--steps", "1", "--checkpoint-dir", f"{mutant}/ck"], what + ": train")
            expect_named(code, err, shard, what + ": train")
            shutil.rmtree(mutant)
    for i in range(2 * per_kind):
        ck = f"{work}/m_ckpt_{i}"
        shutil.copytree(f"{work}/ckpt", ck)
        newest = "ckpt-000000002.h5"
        mutate(f"{ck}/{newest}", rng)
        what = f"checkpoint mutant {i}"
        code, err = run(train + ["--data", f"{work}/raw", "--steps", "3", "--checkpoint-dir", ck, "--resume", "auto", "--reschedule"],
                        what + ": resume auto")
        if code != 0:
            failures.append(f"{what}: resume auto did not fall back to the older checkpoint (exit {code}):\n{err[-2000:]}")
        shutil.rmtree(ck)
finally:
    shutil.rmtree(work, ignore_errors=True)

print(f"{runs} runs of dptrain on {4 * per_kind} mutants")
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("PASS")
