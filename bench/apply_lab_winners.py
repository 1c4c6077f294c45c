#!/usr/bin/env python3
"""Makes the kernel lab's winner the task's baseline.cu, so that the next GPU call can verify it.

    python3 bench/apply_lab_winners.py --baseline tasks/TASK/baseline.cu --json LAB.json [--json ...]
        [--copy NAME=SOURCE.cu ...] [--knobs NAME=KNOB1,KNOB2=V ...] [--min-gain 0.01]

The lab's JSON files (bench/kernel_lab.py --json) hold, per workload, each variant's latency and
whether it matched reference.cu; a --check-only file has no latencies.  A variant wins when it
matched on every workload of every file, and its geometric-mean latency beats the first variant
(the shipped baseline) by more than --min-gain and every other such variant.  The winner is then
applied: a --copy variant's file replaces baseline.cu (without its leading "Candidate for" note),
a --knobs variant's knobs get the default 1 (KNOB) or V (KNOB=V).  Prints what it did; exit 0
either way, 1 with a message on bad input.
"""
import argparse
import json
import math
import re
import sys


def load(paths):
    rows = []
    for path in paths:
        try:
            with open(path) as f:
                rows.extend(json.load(f))
        except (OSError, ValueError) as e:
            sys.exit(f"apply_lab_winners: {path}: {e}")
    return rows


def geomeans(rows):
    names = list(rows[0]["variants"]) if rows else []
    ok = {n: all(r["variants"].get(n, {}).get("ok", False) for r in rows) for n in names}
    timed = [r for r in rows if all(not math.isnan(v["us"]) for v in r["variants"].values())]
    means = {}
    for n in names:
        us = [r["variants"][n]["us"] for r in timed]
        means[n] = math.exp(sum(map(math.log, us)) / len(us)) if us else math.nan
    return names, ok, means


def strip_candidate_note(text):
    lines = text.splitlines(keepends=True)
    if not lines or not lines[0].startswith("// Candidate for"):
        return text
    end = next((i for i, line in enumerate(lines) if line.strip() == "//"), None)
    return text if end is None else "".join(lines[end + 1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--baseline", required=True)
    p.add_argument("--json", action="append", required=True)
    p.add_argument("--copy", action="append", default=[], help="NAME=SOURCE.cu")
    p.add_argument("--knobs", action="append", default=[], help="NAME=KNOB1,KNOB2=V (a bare knob: 1)")
    p.add_argument("--min-gain", type=float, default=0.01)
    opts = p.parse_args()
    copies = dict(c.split("=", 1) for c in opts.copy)
    knobs = {k: v.split(",") for k, v in (c.split("=", 1) for c in opts.knobs)}
    names, ok, means = geomeans(load(opts.json))
    if not names:
        sys.exit("apply_lab_winners: no workloads in the lab's files")
    base = names[0]
    for n in names:
        print(f"{n}: {'matched everywhere' if ok[n] else 'WRONG somewhere'}, geomean {means[n]:.1f} us")
    best = None
    for n in names[1:]:
        if n in copies or n in knobs:
            if ok[n] and means[n] < means[base] * (1 - opts.min_gain) and (best is None or means[n] < means[best]):
                best = n
    if best is None:
        print(f"kept {opts.baseline}: no variant beats {base} by more than {opts.min_gain:.0%} while matching")
        return 0
    with open(opts.baseline) as f:
        text = f.read()
    if best in copies:
        with open(copies[best]) as f:
            text = strip_candidate_note(f.read())
    for knob in knobs.get(best, []):
        name, value = knob.split("=", 1) if "=" in knob else (knob, "1")
        text, hits = re.subn(rf"(#ifndef {name}\n#define {name}) \S+\n", rf"\g<1> {value}\n", text)
        if hits != 1:
            sys.exit(f"apply_lab_winners: {opts.baseline}: no '#ifndef {name}' default to set")
    with open(opts.baseline, "w") as f:
        f.write(text)
    print(f"applied {best} to {opts.baseline}: {means[base] / means[best]:.3f}x of {base} in the geomean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
