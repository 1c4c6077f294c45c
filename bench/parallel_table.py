#!/usr/bin/env python3
"""Throughput table of bench/parallel_search.sh's sessions, from their journals.

Per session (configuration): evaluations, wall time from the run's start to its finish,
evaluations per hour, each GPU's busy fraction with candidates (the candidates' runner processes
without the time they queued for the device, over the wall time), the set-up (reference outputs
and baseline timing, compiles included, once per preparation: the evaluators of a device share
one), the compile time
and the time queued for the device per candidate, and the evaluator's own overhead per candidate
(total minus compile minus timed GPU work minus queueing).
"""
import argparse
import json
import os
import re
import statistics


def load(session):
    events = [json.loads(line) for line in open(os.path.join(session, "journal.jsonl")) if line.strip()]
    evals = [e for e in events if e.get("type") == "evaluation"]
    wall = max(e.get("elapsed_s", 0.0) for e in events)
    return evals, wall


def device_of(worker):
    return re.sub(r"\.\d+$", "", worker) if worker.startswith("gpu") else "gpu0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.0, help="the scripted model's latency per answer (s)")
    ap.add_argument("sessions", nargs="+")
    a = ap.parse_args()
    rows = []
    for s in a.sessions:
        name = os.path.basename(s.rstrip("/")).replace("session-", "")
        evals, wall = load(s)
        busy, compile_s, overhead, queued, seen, setup = {}, [], [], 0.0, set(), 0.0
        for e in evals:
            sec = e["evaluation"].get("seconds", {})
            wait = e["evaluation"].get("phases_s", {}).get("device_wait", 0.0)
            worker = e.get("worker", "")
            dev = device_of(worker)
            # Evaluators of a device that adopted one preparation report its times as theirs: count
            # each preparation once.
            prep = (dev, sec.get("baseline", 0.0), sec.get("reference", 0.0))
            if prep not in seen:
                setup += prep[1] + prep[2]
            seen.add(prep)
            busy[dev] = busy.get(dev, 0.0) + sec.get("candidate", 0.0) - wait
            queued += wait
            compile_s.append(sec.get("compile", 0.0))
            if e["evaluation"].get("status") == "PASSED":
                overhead.append(sec.get("total", 0.0) - sec.get("compile", 0.0) - sec.get("timed_gpu", 0.0) - wait)
        workers = sorted({e.get("worker", "") or "(one)" for e in evals})
        rows.append((name, len(evals), wall, busy, statistics.mean(compile_s) if compile_s else 0.0,
                     statistics.median(overhead) if overhead else 0.0, workers, queued / max(1, len(evals)), setup))
    base = rows[0][1] / rows[0][2] if rows and rows[0][2] > 0 else 0.0
    print(f"model latency per answer: {a.delay:.1f} s")
    print(f"{'config':8} {'evals':>5} {'wall s':>8} {'evals/h':>8} {'vs first':>8} {'GPU busy':>18} "
          f"{'set-up s':>8} {'compile s':>9} {'queued s':>8} {'overhead s':>10}  evaluators")
    for name, n, wall, busy, comp, over, workers, queued, setup in rows:
        rate = n / wall * 3600 if wall > 0 else 0.0
        busy_s = " ".join(f"{d}:{v / wall:.2f}" for d, v in sorted(busy.items())) if wall > 0 else "-"
        print(f"{name:8} {n:5d} {wall:8.1f} {rate:8.0f} {rate / 3600 / base if base else 0:8.2f} {busy_s:>18} "
              f"{setup:8.1f} {comp:9.2f} {queued:8.2f} {over:10.2f}  {', '.join(workers)}")


if __name__ == "__main__":
    main()
