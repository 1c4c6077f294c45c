#!/usr/bin/env python3
"""Turns the files bench/gpu_suite.sh wrote into the markdown tables of docs/perf.md."""
import glob
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
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as e:
        return {"unreadable": str(e)}


lines = []
for path in sorted(glob.glob(os.path.join(out, "eval_*.json"))):
    tag = os.path.basename(path)[len("eval_"):-len(".json")]
    ev, ind = read(f"eval_{tag}.json"), read(f"indep_{tag}.json")
    if not ev or "workloads" not in ev:
        lines.append(f"(no readable evaluation for {tag})\n")
        continue
    lines.append(f"### {tag}: baseline.cu, `ksearch eval` against an independent timer\n")
    lines.append(f"Device {ev.get('device')}, measured copy bandwidth {ev.get('copy_bandwidth_gbs', 0):.0f} GB/s; "
                 f"status {ev['status']}, J = {ev['score']:.1f}.\n")
    lines.append("| workload | ksearch median us | CUPTI span median us | do_bench median us | ratio | events median us "
                 "| roofline fraction |")
    lines.append("|---|---|---|---|---|---|---|")
    indep = {w["id"]: w for w in (ind or {}).get("workloads", [])}
    ratios = []
    for w in ev["workloads"]:
        i = indep.get(w["id"], {})
        db = i.get("do_bench_median_us")
        span = w.get("device_span_us", 0)
        span_text = f"{span:.2f}" if span else "-"
        if db:
            ratio = w["latency_us"] / db
            ratios.append(ratio)
            lines.append(f"| {w['id'][:8]} | {w['latency_us']:.2f} | {span_text} | {db:.2f} | {ratio:.3f} | "
                         f"{i.get('events_median_us', 0):.2f} | {w['roofline_fraction']:.3f} |")
        else:
            lines.append(f"| {w['id'][:8]} | {w['latency_us']:.2f} | {span_text} | - | - | - | "
                         f"{w['roofline_fraction']:.3f} |")
    if ratios:
        lines.append(f"\nRatio ksearch / do_bench: min {min(ratios):.3f}, max {max(ratios):.3f}.\n")

for path in sorted(glob.glob(os.path.join(out, "repeat_*.json"))):
    rep = read(os.path.basename(path))
    task = os.path.basename(path)[len("repeat_"):-len(".json")]
    if not rep or "repeats" not in rep:
        lines.append(f"(no readable repeat for {task})\n")
        continue
    r = rep["repeats"]
    phases = ", ".join(f"{k} {v:.3f}" for k, v in sorted(r.get("phases_mean_s", {}).items()))
    lines.append(f"### {task}: repeated evaluations of baseline.cu in one evaluator\n")
    lines.append(f"{r.get('runs', '?')} evaluations: latency geomean mean {r['latency_mean_us']:.3f} us, coefficient of "
                 f"variation {100 * r['latency_cv']:.3f} %, evaluator overhead per candidate beyond compile, warm-up "
                 f"and the timed loop {r['overhead_seconds_per_candidate']:.3f} s (repeats 2..N).\n")
    lines.append(f"Phases, mean seconds per candidate: {phases}.\n")
    per = ", ".join(f"{k} {100 * v:.2f} %" for k, v in r.get("workload_latency_cv", {}).items())
    lines.append(f"Coefficient of variation per workload: {per}.\n")
print("\n".join(lines))
