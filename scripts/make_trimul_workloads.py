#!/usr/bin/env python3
"""Writes tasks/trimul/workloads.jsonl: GPU MODE TriMul's seven benchmark shapes and six smaller
test shapes (both input distributions, both mask settings), reproducibly, and lists the benchmark
shapes in definition.json's scored_workloads (J covers those, as the leaderboard's ranking does).

GPU MODE draws the input from randn or Cauchy(0, 2), the mask from randint(0, 2) (all ones with
nomask), LayerNorm weights and biases from randn, and the projection weights as randn / sqrt(128).
Usage: python3 scripts/make_trimul_workloads.py, then python3 scripts/held_out_workloads.py (the
held-out workloads, which this leaves out)
"""
import json
import math
import pathlib
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tasks" / "trimul"
HIDDEN = 128
WEIGHT_STD = 1.0 / math.sqrt(HIDDEN)

# (seq_len, batch, dim, nomask, distribution, role)
SHAPES = [
    (32, 1, 128, True, "normal", "test"), (32, 1, 128, False, "cauchy", "test"),
    (64, 2, 256, False, "normal", "test"), (128, 1, 768, True, "normal", "test"),
    (128, 2, 384, False, "cauchy", "test"), (256, 1, 128, False, "normal", "test"),
    (256, 2, 128, True, "normal", "benchmark"), (768, 1, 128, True, "cauchy", "benchmark"),
    (256, 2, 384, False, "normal", "benchmark"), (512, 1, 128, True, "normal", "benchmark"),
    (1024, 1, 128, True, "cauchy", "benchmark"), (768, 1, 384, False, "normal", "benchmark"),
    (1024, 1, 384, True, "normal", "benchmark"),
]


def trimul_inputs(nomask, dist):
    """The input sources of a TriMul workload (scripts/held_out_workloads.py uses them too)."""
    x = {"type": "random"} if dist == "normal" else {"type": "random", "distribution": "cauchy", "scale": 2.0}
    weight = {"type": "random", "std": WEIGHT_STD}
    inputs = {"input": x, "mask": {"type": "constant", "value": 1} if nomask else {"type": "random"},
              "norm_weight": {"type": "random"}, "norm_bias": {"type": "random"}}
    for name in ("left_proj", "right_proj", "left_gate", "right_gate", "out_gate"):
        inputs[name] = weight
    inputs["to_out_norm_weight"] = {"type": "random"}
    inputs["to_out_norm_bias"] = {"type": "random"}
    inputs["to_out"] = weight
    return inputs


def row(seq_len, batch, dim, nomask, dist, role):
    inputs = trimul_inputs(nomask, dist)
    tag = f"{role}-n{seq_len}-b{batch}-c{dim}-{'nomask' if nomask else 'mask'}-{dist}"
    return {"definition": "trimul", "solution": None, "evaluation": None,
            "workload": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksearch/trimul/{tag}")),
                         "axes": {"batch_size": batch, "seq_len": seq_len, "dim": dim},
                         "inputs": inputs}}


def main():
    path = ROOT / "workloads.jsonl"
    rows = [row(*s) for s in SHAPES]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{path}: {len(SHAPES)} workloads")
    definition = ROOT / "definition.json"
    text = definition.read_text()
    scored = [r["workload"]["uuid"] for r, s in zip(rows, SHAPES) if s[-1] == "benchmark"]
    listing = '  "scored_workloads": [\n' + ",\n".join(f'    "{u}"' for u in scored) + "\n  ],\n"
    start = text.find('  "scored_workloads"')
    if start >= 0:  # replace the old list, keeping the file's hand-written layout otherwise
        text = text[:start] + text[text.find("],\n", start) + 3:]
    at = text.find('  "cost_model"')
    definition.write_text(text[:at] + listing + text[at:])
    print(f"{definition}: {len(scored)} scored workloads")


if __name__ == "__main__":
    main()
