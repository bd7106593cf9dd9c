#!/usr/bin/env python3
"""Checks the traces `dptrain train --trace DIR` wrote, and prints on how many rank-steps a bucket's
allreduce overlapped the backward pass.

  trace_check.py DIR RANKS FIRST LAST on|off [--evaluate-every N] [--nodes NODE...]

Every rank's file: its process named "rank R on NODE" (NODE the R-th of --nodes, when given), its
threads named, nothing dropped, complete events in order, exactly the steps FIRST..LAST, and in each
step the step, forward, backward and optimizer update on the main thread in that order, at least 3
buckets' allreduces (on the communication thread with overlap on, after which one gradient wait
follows the backward pass; on the main thread and no gradient wait with overlap off), at most one
data wait, and an evaluation at every step divisible by --evaluate-every. With overlap on, some
allreduce must overlap a backward pass; with overlap off, none may.
"""
import argparse
import json
import re
import sys


def end(e):
    return e["ts"] + e["dur"]


def check_rank(path, rank, first, last, overlap, evaluate_every, node):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    meta = {(e["name"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert all(e["pid"] == rank for e in events), f"{path}: pid is not the rank"
    process = meta[("process_name", 0)]["name"]
    node_pattern = re.escape(node) if node else r"\S+"
    assert re.fullmatch(rf"rank {rank} on {node_pattern}", process), process
    assert meta[("thread_name", 1)]["name"] == "main"
    assert meta[("thread_name", 2)]["name"] == "communication"
    assert trace["otherData"]["events_dropped"] == 0
    complete = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 for e in complete)
    starts = [e["ts"] for e in complete]
    assert starts == sorted(starts), f"{path}: events out of order"
    steps = sorted({e["args"]["step"] for e in complete})
    assert steps == list(range(first, last + 1)), f"{path}: steps {steps}"
    overlapping = 0
    for step in steps:
        mine = [e for e in complete if e["args"]["step"] == step]
        names = [e["name"] for e in mine]

        def one(name):
            found = [e for e in mine if e["name"] == name]
            assert len(found) == 1, f"{path} step {step}: {name} in {names}"
            return found[0]

        whole, forward, backward, update = one(f"step {step}"), one("forward"), one("backward"), one("optimizer update")
        # On the main thread, in this order, inside the step (1 us: starts are whole microseconds).
        order = [whole["ts"], forward["ts"], end(forward), backward["ts"], end(backward), update["ts"], end(update),
                 end(whole)]
        assert all(a <= b + 1 for a, b in zip(order, order[1:])), f"{path} step {step}: {mine}"
        assert all(e["tid"] == 1 for e in (whole, forward, backward, update))
        buckets = [e for e in mine if e["name"].startswith("allreduce bucket ")]
        assert len(buckets) >= 3, f"{path}: {len(buckets)} buckets at step {step}"
        assert sorted(e["args"]["bucket"] for e in buckets) == list(range(len(buckets)))
        waits = [e for e in mine if e["name"] == "gradient wait"]
        if overlap:
            assert all(e["tid"] == 2 for e in buckets), "overlap on: allreduces off the communication thread"
            assert len(waits) == 1 and waits[0]["ts"] + 1 >= end(backward)
        else:
            assert all(e["tid"] == 1 for e in buckets), "overlap off: allreduces off the main thread"
            assert not waits
        if any(b["ts"] < end(backward) and end(b) > backward["ts"] for b in buckets):
            overlapping += 1
        assert sum(e["name"] == "data wait" for e in mine) <= 1
    if evaluate_every:
        evaluations = [e["args"]["step"] for e in complete if e["name"] == "evaluation"]
        assert evaluations == [s for s in steps if s % evaluate_every == 0], evaluations
    return overlapping


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("ranks", type=int)
    parser.add_argument("first", type=int)
    parser.add_argument("last", type=int)
    parser.add_argument("overlap", choices=["on", "off"])
    parser.add_argument("--evaluate-every", type=int, default=0)
    parser.add_argument("--nodes", nargs="*", default=[])
    a = parser.parse_args()
    overlap = a.overlap == "on"
    overlapping = sum(
        check_rank(f"{a.directory}/trace-rank-{rank}.json", rank, a.first, a.last, overlap, a.evaluate_every,
                   a.nodes[rank] if a.nodes else None) for rank in range(a.ranks))
    if overlap:
        assert overlapping > 0, "overlap on, yet no allreduce overlaps a backward pass"
    else:
        assert overlapping == 0, "overlap off, yet an allreduce overlaps a backward pass"
    print(overlapping)


if __name__ == "__main__":
    sys.exit(main())
