#!/usr/bin/env python3
"""Table of bench/prestart_overhead.sh: per task and configuration, the evaluator's overhead per
candidate beyond compile and timed GPU work (repeats 2..N of `ksearch eval --repeat`), what of it
the candidate waited for its runner to start, and the latency mean and CV as a check that
starting ahead changes no measurement."""
import json
import os
import sys

CONFIGS = [
    ("native-cold", "ksearch-runner, started with the candidate"),
    ("native-ahead", "ksearch-runner, started ahead"),
    ("native-ahead-pageable", "ksearch-runner, started ahead, pageable copies"),
    ("python-cold", "Python runner, started with the candidate (gap)"),
    ("python-ahead", "Python runner, started ahead (gap)"),
    ("python-ahead-nogap", "Python runner, started ahead, no gap"),
]


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def main(root):
    print("| task | configuration | status | overhead s | runner start-up waited s | runner exit s | "
          "previous runner's exit waited s | calls untimed s | compare s | latency mean us | CV % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    parts = []
    for task in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, task)):
            continue
        for name, label in CONFIGS:
            doc = load(os.path.join(root, task, name + ".json"))
            if doc is None:
                if os.path.exists(os.path.join(root, task, name + ".err")):
                    print(f"| {task[:12]} | {label} | did not complete | | | | | | | | |")
                continue
            rep = doc.get("repeats") or {}
            ph = rep.get("phases_mean_s", {})
            print(f"| {task[:12]} | {label} | {doc['status']} | {rep.get('overhead_seconds_per_candidate', 0):.3f} | "
                  f"{ph.get('runner_startup', 0):.3f} | {ph.get('runner_exit', 0):.3f} | "
                  f"{ph.get('previous_runner_exit', 0):.3f} | "
                  f"{ph.get('calls_untimed', 0):.3f} | {ph.get('compare', 0):.3f} | "
                  f"{rep.get('latency_mean_us', 0):.2f} | {100 * rep.get('latency_cv', 0):.2f} |")
            untimed = {k[len("untimed."):]: v for k, v in ph.items() if k.startswith("untimed.")}
            if untimed:
                parts.append((task[:12], label, untimed))
    if parts:  # where the untimed part of the calls went, as the runner measured it
        names = sorted({k for _, _, u in parts for k in u})
        print()
        print("| task | configuration | " + " | ".join(n + " s" for n in names) + " |")
        print("|---|---|" + "---|" * len(names))
        for task, label, untimed in parts:
            print(f"| {task} | {label} | " + " | ".join(f"{untimed.get(n, 0):.3f}" for n in names) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
