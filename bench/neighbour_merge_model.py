#!/usr/bin/env python3
"""A model of the GQA decode baseline's neighbour merge (GQA_DECODE_NEIGHBOUR): which run writes
each request's output, which publishes a state into which partial slot, and which waits on which
flag, for the run partition ks_run chooses. Checks, on every workload of the task and on random
batches (empty requests, 1 to 66 runs): every slot is published at most once, every wait has
exactly the publisher it expects (the next run, same request), and every non-empty request's
output is written once. Prints the spans (runs a request covers) of each workload.

    python3 bench/neighbour_merge_model.py [--random 3000]
"""
import argparse
import json
import math
import os
import random
from collections import Counter

TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks", "gqa_paged_decode_h32_kv4_d128_ps1")
MIN_CHUNK = 128  # GQA_DECODE_MIN_CHUNK


def partition(lengths, resident_runs):
    """ks_run's chunk and run count (workspace slots: batch * 64)."""
    tokens, batch = sum(lengths), len(lengths)
    max_runs = max(1, min(batch * 64 - batch + 1, resident_runs))
    chunk = max(math.ceil(tokens / max_runs), MIN_CHUNK)
    if max_runs == 1 or chunk >= tokens:
        chunk = max(tokens, 1)
    return chunk, (math.ceil(tokens / chunk) if tokens else 1)


def check(lengths, resident_runs=66):
    chunk, runs = partition(lengths, resident_runs)
    tokens = sum(lengths)
    indptr = [0]
    for n in lengths:
        indptr.append(indptr[-1] + n)
    outputs, published, waits = Counter(), {}, []
    for r in range(runs):
        begin, end = min(r * chunk, tokens), min((r + 1) * chunk, tokens)
        for b, (lo, hi) in enumerate(zip(indptr, indptr[1:])):
            if hi == lo or max(lo, begin) >= min(hi, end):
                continue
            if lo // chunk == (hi - 1) // chunk:  # whole: written directly
                outputs[b] += 1
                continue
            if hi > end and end < tokens:  # takes run + 1's state
                waits.append((r, b))
            if lo >= begin:
                outputs[b] += 1
            else:
                slot = b + r
                assert slot not in published, f"slot {slot} published twice"
                published[slot] = (r, b)
    for r, b in waits:
        assert published.get(b + r + 1) == (r + 1, b), f"run {r} waits on slot {b + r + 1}, published by {published.get(b + r + 1)}"
    for b, n in enumerate(lengths):
        assert outputs[b] == (1 if n else 0), f"request {b} written {outputs[b]} times"
    return chunk, runs, indptr


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--random", type=int, default=3000, help="random batches to check besides the workloads")
    opts = p.parse_args()
    with open(os.path.join(TASK, "workloads.jsonl")) as f:
        for line in f:
            w = json.loads(line)["workload"]
            lengths = w["inputs"]["kv_indptr"]["lengths"]
            chunk, runs, indptr = check(lengths)
            spans = Counter((hi - 1) // chunk - lo // chunk + 1 for lo, hi in zip(indptr, indptr[1:]) if hi > lo)
            print(f"{w['uuid'][:8]} batch {len(lengths)} tokens {sum(lengths)} chunk {chunk} runs {runs} "
                  f"requests by runs spanned {dict(sorted(spans.items()))}")
    rng = random.Random(1)
    for _ in range(opts.random):
        lengths = [rng.choice([0, 1, rng.randint(1, 3000)]) for _ in range(rng.randint(1, 80))]
        if sum(lengths):
            check(lengths, rng.choice([1, 2, 5, 66]))
    print(f"protocol holds on every workload and {opts.random} random batches")


if __name__ == "__main__":
    main()
