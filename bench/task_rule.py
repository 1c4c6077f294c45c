#!/usr/bin/env python3
"""A task's tolerance rule as the evaluator applies it (core/task/comparison.cpp), in torch, for
the bench scripts that judge outputs on the GPU (bench/kernel_lab.py, bench/baselines_vs_torch.py).

An element matches when |x - y| <= atol or |x - y| <= rtol |y|, or when x and y are the same
infinity; a NaN never matches.  An output passes when the matched share reaches
required_matched_ratio and, where that is below 1, when no element that missed is NaN or Inf and
none is off by more than miss_rms_fraction times the RMS of the expected values.

    python3 bench/task_rule.py --judge ACTUAL EXPECTED ATOL RTOL RATIO MISS_RMS
        (raw float32 files; prints judge()'s verdict as JSON: tests/tst_benchrule.cpp holds it
        to the evaluator's own verdict on the same data)
"""
import json
import sys

import torch


def rule_of(definition):
    """(atol, rtol, required_matched_ratio, miss_rms_fraction) of a definition.json, with the
    evaluator's defaults."""
    tol = definition.get("tolerance", {})
    return (tol.get("atol", 1e-2), tol.get("rtol", 1e-2), tol.get("required_matched_ratio", 1.0),
            tol.get("miss_rms_fraction", 0.5))


def judge(got, expected, rule):
    """{"max_abs_error", "matched_ratio", "within_tolerance"} of one output against the expected
    one (any shapes with the same number of elements; compared in float64)."""
    atol, rtol, ratio, miss_rms = rule
    x, y = got.reshape(-1).double(), expected.reshape(-1).double()
    if x.numel() != y.numel():
        return {"max_abs_error": float("inf"), "matched_ratio": 0.0, "within_tolerance": False}
    both = torch.isfinite(x) & torch.isfinite(y)
    err = torch.where(both, (x - y).abs(), torch.zeros_like(x))
    hit = both & ((err <= atol) | (err <= rtol * y.abs()))
    hit |= ~torch.isfinite(x) & ~torch.isnan(x) & (x == y)
    non_finite = (~torch.isfinite(x) & ~hit).sum().item()
    matched = hit.sum().item() / x.numel() if x.numel() else 1.0
    misses = err[both & ~hit]
    worst_miss = misses.max().item() if misses.numel() else 0.0
    # As the evaluator: squares of the pairs finite on both sides, over the elements less the
    # candidate's non-finite ones.
    counted = x.numel() - non_finite
    rms = (y[both].pow(2).sum().item() / counted) ** 0.5 if counted else 0.0
    if ratio >= 1.0:
        ok = hit.all().item()
    else:
        ok = matched >= ratio and non_finite == 0 and worst_miss <= miss_rms * rms
    worst = err[both].max().item() if both.any().item() else 0.0
    return {"max_abs_error": worst, "matched_ratio": matched, "within_tolerance": bool(ok)}


def judge_files(actual, expected, *rule):
    def load(path):
        with open(path, "rb") as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    print(json.dumps(judge(load(actual), load(expected), tuple(float(v) for v in rule))))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "--judge":
        sys.exit(judge_files(*sys.argv[2:]))
    sys.exit(print(__doc__) or 2)
