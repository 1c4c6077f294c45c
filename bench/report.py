#!/usr/bin/env python3
"""Turns the files bench/gpu_suite.sh wrote into the markdown tables of docs/perf.md."""
import json
import os
import sys

out = sys.argv[1]


def read(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    text = open(path).read()
    start = text.find("{")
    return json.loads(text[start:]) if start >= 0 else None


lines = []
for task in ["rmsnorm", "gqa"]:
    ev, ind = read(f"eval_{task}.json"), read(f"indep_{task}.json")
    if not ev:
        lines.append(f"(no evaluation of {task})\n")
        continue
    lines.append(f"### {task}: baseline.cu, `ksearch eval` against an independent timer\n")
    lines.append(f"Device {ev.get('device')}, measured copy bandwidth {ev.get('copy_bandwidth_gbs', 0):.0f} GB/s; "
                 f"status {ev['status']}, J = {ev['score']:.1f}.\n")
    lines.append("| workload | ksearch median us | do_bench median us | ratio | events median us | roofline fraction |")
    lines.append("|---|---|---|---|---|---|")
    indep = {w["id"]: w for w in (ind or {}).get("workloads", [])}
    ratios = []
    for w in ev["workloads"]:
        i = indep.get(w["id"], {})
        db = i.get("do_bench_median_us")
        ratio = w["latency_us"] / db if db else None
        if ratio:
            ratios.append(ratio)
        lines.append(f"| {w['id'][:8]} | {w['latency_us']:.2f} | {db:.2f} | {ratio:.3f} | {i.get('events_median_us', 0):.2f} | "
                     f"{w['roofline_fraction']:.3f} |" if db else
                     f"| {w['id'][:8]} | {w['latency_us']:.2f} | - | - | - | {w['roofline_fraction']:.3f} |")
    if ratios:
        lines.append(f"\nRatio ksearch / do_bench: min {min(ratios):.3f}, max {max(ratios):.3f}.\n")
    rep = read(f"repeat_{task}.json")
    if rep and "repeats" in rep:
        r = rep["repeats"]
        lines.append(f"Ten evaluations of baseline.cu in one evaluator: latency geomean mean {r['latency_mean_us']:.3f} us, "
                     f"coefficient of variation {100 * r['latency_cv']:.3f} %, evaluator overhead per candidate beyond "
                     f"compile and the timed loop {r['overhead_seconds_per_candidate']:.3f} s.\n")
print("\n".join(lines))
