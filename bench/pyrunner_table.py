#!/usr/bin/env python3
"""Table of bench/pyrunner_vs_runner.sh: per workload, the same kernel through ksearch-runner
(the evaluation's baseline, timed in the same run) and through the Python runner, their ratio,
and each runner's overhead per candidate beyond compile and timed work."""
import json
import os
import sys


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def main(root):
    for task in sorted(os.listdir(root)):
        py, native = load(os.path.join(root, task, "python.json")), load(os.path.join(root, task, "native.json"))
        if not os.path.isdir(os.path.join(root, task)):
            continue
        print(f"\n### {task}\n")
        if not py:
            print("(the Python runner's evaluation did not complete: see python.err)")
            continue
        print(f"Python runner evaluation: {py['status']}, J = {py['score']:.1f}\n")
        print("| workload | ksearch-runner us | Python runner us | Python / ksearch-runner |")
        print("|---|---|---|---|")
        ratios = []
        for w in py["workloads"]:
            native_us, python_us = w["baseline_latency_us"], w["latency_us"]
            ratio = python_us / native_us if native_us > 0 and python_us > 0 else float("nan")
            if native_us >= 10:
                ratios.append(ratio)
            print(f"| {w['id'][:8]} | {native_us:.2f} | {python_us:.2f} | {ratio:.3f} |")
        if ratios:
            print(f"\nworkloads of 10 us and more: ratio {min(ratios):.3f} to {max(ratios):.3f}")
        for name, doc in (("Python runner", py), ("ksearch-runner", native)):
            rep = (doc or {}).get("repeats")
            if rep:
                phases = rep.get("phases_mean_s", {})
                print(f"- {name}: overhead per candidate beyond compile and timed work "
                      f"{rep['overhead_seconds_per_candidate']:.3f} s (runner start-up "
                      f"{phases.get('runner_startup', 0):.3f} s), repeats 2..{rep['runs']}")


if __name__ == "__main__":
    main(sys.argv[1])
