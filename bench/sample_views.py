#!/usr/bin/env python3
"""The three views of each timed call, and what each sample rule charges (issue #12's J noise).

Reads the runner result lines (result.jsonl) under the given folders, as `ksearch eval --keep`
leaves them, oldest job first, and prints one row per timing loop: the medians of the events,
the host views (wall clock less the launch overhead, and since session 37 less the lead-in's own
device time, also shown), the CUPTI spans, then the median each rule charges with how many samples
it raised:

  old  session 35's rule: a sample whose host view exceeds its events by max(3 us, 10 %) is
       charged the host view, then the span rule
  new  gpu/runner/samplerule.h: the span rule per sample, then the host clock judged on the
       loop's medians, spans or not

  bench/sample_views.py RESULTS_DIR... [--json OUT]
"""
import argparse
import json
import os
import sys


def median(values):
    """The element at n/2 of the sorted values, as the runners report it."""
    v = sorted(values)
    return v[len(v) // 2] if v else 0.0


def span_rule(events, spans, offset, charged, side):
    for k, span in enumerate(spans[:len(events)]):
        if span > events[k] + max(1.0, 0.05 * events[k]) and span + offset > charged[k]:
            charged[k], side[k] = span + offset, True


def old_rule(events, hosts, spans, offset):
    charged, side = list(events), [False] * len(events)
    for k, (e, h) in enumerate(zip(events, hosts)):
        if h > e + max(3.0, 0.1 * e):
            charged[k], side[k] = h, True
    span_rule(events, spans, offset, charged, side)
    return charged, side


def new_rule(events, hosts, spans, offset):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "python"))
    import ksearch_pyrunner  # the Python runner's copy of samplerule.h (tst_samplerule checks they agree)
    return ksearch_pyrunner.charge_samples(events, hosts, spans if spans else None, offset)


def loops(folders):
    files = []
    for folder in folders:
        for root, _, names in os.walk(folder):
            if "result.jsonl" in names:
                path = os.path.join(root, "result.jsonl")
                label = os.path.join(os.path.basename(os.path.normpath(folder)), os.path.relpath(root, folder))
                files.append((os.path.getmtime(path), path, label))
    for _, path, label in sorted(files):
        with open(path) as f:
            for line in f:
                try:
                    call = json.loads(line)
                except ValueError:
                    continue
                bench = call.get("bench")
                if bench and bench.get("device_samples_us"):
                    yield label, call.get("id", "?"), bench


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows = []
    print("| job | call | n | events | host view | span | lead-in | old: charged (raised) | new: charged (raised) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for job, call, b in loops(args.folders):
        events = b["device_samples_us"]
        hosts = b.get("host_samples_us", [])
        spans = b.get("span_samples_us", [])
        offset = b.get("span_offset_us", 0.0)
        leads = b.get("lead_in_samples_us", [])  # runners since session 37: the flush's own device time
        stretched = b.get("stretched_lead_ins", 0)  # lead-ins past the calibrated one (not left out whole)
        if len(hosts) != len(events):
            print("| %s | %s | %d | (no host views: a runner before samplerule.h) |" % (job, call, len(events)))
            continue
        old, old_side = old_rule(events, hosts, spans, offset)
        new, new_side = new_rule(events, hosts, spans, offset)
        row = {"job": job, "call": call, "n": len(events), "events_us": median(events), "host_us": median(hosts),
               "span_us": median(spans) if spans else None, "lead_in_us": median(leads) if leads else None,
               "stretched_lead_ins": stretched, "old_us": median(old), "old_raised": sum(old_side),
               "new_us": median(new), "new_raised": sum(new_side), "reported_us": b.get("median_us")}
        rows.append(row)
        lead = "-"
        if leads:
            lead = "%.1f" % row["lead_in_us"] + (" (%d long)" % stretched if stretched else "")
        print("| %s | %s | %d | %.2f | %.2f | %s | %s | %.2f (%d) | %.2f (%d) |" % (
            job, call[:8], row["n"], row["events_us"], row["host_us"], "%.2f" % row["span_us"] if spans else "-",
            lead, row["old_us"], row["old_raised"], row["new_us"], row["new_raised"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
