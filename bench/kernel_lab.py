#!/usr/bin/env python3
"""Kernel lab: times variants of one task's kernel side by side on the same inputs.

A tool for writing baselines, not part of the evaluator: it lets one GPU call compare several
builds of a kernel (different -D knobs or designs) on every workload of a task, with every
variant checked against the task's reference.cu on the same inputs first. Verdicts of record
still come from `ksearch eval`.

Libraries are built on the development machine by bench/kernel_lab.sh (nvcc with the task's
ks_task.h, the flags of gpu/compiler.cpp); this script only loads them with ctypes. Inputs
follow the workload's descriptors: random (normal, bf16), indptr from lengths, unique_indices
(a random permutation of the pool), scalar. Timing: triton's do_bench, median, L2 cleared
before every call; with --rounds N the variants are timed in N rounds, the order reversed every
other round, and each reports its median over the rounds (calls of milliseconds drift with the
card's clock within one pass: a copy of the base library under a second name shows the spread). "GB/s" counts every input read once, with a paged pool counted only for
the pages kv_indices names, and every output written once: the cost model's bytes.
"""
import argparse
import ctypes
import json
import math
import os
import re
import statistics
import sys

import torch
from triton.testing import do_bench

from ks_header import ksargs_fields
import task_rule

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "int32": torch.int32, "float16": torch.float16,
          "bool": torch.bool, "float8_e4m3fn": torch.float8_e4m3fn}


def args_struct(header):
    """ctypes mirror of KsArgs, parsed from ks_task.h."""
    fields = [(name, getattr(ctypes, ctype)) for name, ctype in ksargs_fields(header)]
    return type("KsArgs", (ctypes.Structure,), {"_fields_": fields})


def workload_inputs(definition, workload, gen, pages=None, sequential=False):
    axes = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    axes.update(workload["axes"])
    if pages and "num_pages" in axes:  # a smaller pool, never below the pages the workload names
        axes["num_pages"] = max(min(pages, axes["num_pages"]), axes.get("num_kv_indices", 0))
    tensors, scalars = {}, {}
    for name, spec in definition["inputs"].items():
        desc = workload["inputs"][name]
        if spec["shape"] is None:
            scalars[name] = desc["value"]
            continue
        shape = [axes[d] if isinstance(d, str) else d for d in spec["shape"]]
        dtype = DTYPES[spec["dtype"]]
        kind = desc["type"]
        if kind == "indptr":
            lengths = torch.tensor([0] + list(desc["lengths"]), dtype=torch.int64)
            t = torch.cumsum(lengths, 0).to(torch.int32)
        elif kind == "unique_indices":
            high = axes[desc["high"]] if isinstance(desc["high"], str) else desc["high"]
            if sequential:  # consecutive pages: what the same kernel does without the random gather
                t = torch.arange(shape[0], device="cuda", dtype=torch.int32)
            else:
                t = torch.randperm(high, generator=gen, device="cuda")[: shape[0]].to(torch.int32)
        elif kind == "random" and dtype == torch.bool:
            t = torch.rand(shape, generator=gen, device="cuda") < 0.5
        elif kind == "random" and desc.get("distribution") == "cauchy":
            u = torch.rand(shape, generator=gen, dtype=torch.float64, device="cuda")
            t = (desc.get("scale", 1.0) * torch.tan(math.pi * (u - 0.5))).to(dtype)
        elif kind == "random":
            t = (desc.get("std", 1.0) * torch.randn(shape, generator=gen, dtype=torch.float32, device="cuda")).to(dtype)
        elif kind == "constant":
            t = torch.full(shape, desc["value"], dtype=dtype, device="cuda")
        else:
            raise SystemExit(f"kernel_lab: input {name}: descriptor type {kind!r} is not supported here")
        tensors[name] = t.cuda()
    outputs = {}
    for name, spec in definition["outputs"].items():
        shape = [axes[d] if isinstance(d, str) else d for d in spec["shape"]]
        outputs[name] = torch.empty(shape, dtype=DTYPES[spec["dtype"]], device="cuda")
    return axes, tensors, scalars, outputs


def workspace_bytes(definition, axes):
    """The definition's workspace_bytes expression evaluated over the axes (+ - * / and parentheses)."""
    text = str(definition.get("workspace_bytes", "0"))
    for name in sorted(axes, key=len, reverse=True):
        text = re.sub(rf"\b{name}\b", str(int(axes[name])), text)
    if not re.fullmatch(r"[0-9+\-*/() ]*", text):
        raise SystemExit(f"kernel_lab: workspace_bytes {text!r} is not plain arithmetic")
    return eval(text)  # digits and operators only, checked above


def traffic_bytes(definition, axes, tensors, outputs):
    pages = axes.get("num_pages")
    total = 0
    for name, t in tensors.items():
        shape = definition["inputs"][name]["shape"]
        if pages is not None and shape and shape[0] == "num_pages":
            total += t[0].numel() * t.element_size() * axes["num_kv_indices"]
        else:
            total += t.numel() * t.element_size()
    return total + sum(t.numel() * t.element_size() for t in outputs.values())


def timed_after_read_flush(call, buffer, samples=200):
    """Median of `samples` calls, each after L2 is refilled with clean lines by reading `buffer`
    (the same event placement as do_bench, a read instead of its write)."""
    for _ in range(10):
        call()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    for i in range(samples):
        sink.copy_(buffer.sum())
        starts[i].record()
        call()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2] * 1e3


def kernel_times(call, calls=20):
    """Mean device microseconds per call of each kernel `call` launches, by short kernel name."""
    from torch.profiler import ProfilerActivity, profile
    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    totals = {}
    for ev in prof.events():
        if ev.device_type.name != "CUDA":
            continue
        name = re.sub(r"^.*?(\w+)(<[^>]*>)?\(.*$", r"\1\2", ev.name) if "(" in ev.name else ev.name
        spent = ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
        totals[name[:40]] = totals.get(name[:40], 0.0) + spent / calls
    return totals


def time_variants(row, calls, order, opts, flush_buffer):
    """Times each named variant once more (its us, or with --rounds one more entry of its rounds),
    and its kernels on its first timing."""
    rep = max(50, 200 // opts.rounds)
    for name in order:
        entry, call = row["variants"][name], calls[name]
        if opts.check_only:
            us = float("nan")
        elif opts.flush == "write":
            us = do_bench(call, warmup=25, rep=rep, return_mode="median") * 1e3
        else:
            us = timed_after_read_flush(call, flush_buffer)
        entry.setdefault("rounds", []).append(us)
        entry["us"] = us
        if opts.kernels and not opts.check_only and "kernels" not in entry:
            entry["kernels"] = kernel_times(call)


class Kernel:
    def __init__(self, path, Args):
        self.lib = ctypes.CDLL(path)
        self.fn = self.lib.ks_run
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        self.Args = Args

    def bind(self, axes, tensors, scalars, outputs, workspace, workspace_size):
        a = self.Args()
        for name, ctype in self.Args._fields_:
            if name in tensors:
                setattr(a, name, tensors[name].data_ptr())
            elif name in outputs:
                setattr(a, name, outputs[name].data_ptr())
            elif name in scalars:
                setattr(a, name, scalars[name])
            elif name in axes:
                setattr(a, name, int(axes[name]))
        stream = torch.cuda.current_stream().cuda_stream
        ptr, size = workspace.data_ptr(), workspace_size

        def call():
            rc = self.fn(ctypes.byref(a), ptr, size, stream)
            if rc != 0:
                raise RuntimeError(f"ks_run returned {rc}")

        return call


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", required=True, help="task folder (definition.json, workloads.jsonl)")
    p.add_argument("--header", required=True, help="the task's ks_task.h")
    p.add_argument("--reference", required=True, help="reference.cu built as a library")
    p.add_argument("variants", nargs="+", help="NAME=LIBRARY.so, timed in this order")
    p.add_argument("--workspace-mib", type=int,
                   help="workspace to allocate; default: the most the definition's workspace_bytes asks of the "
                        "chosen workloads (every call gets what the evaluator would give it)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--pages", type=int, help="shrink every workload's page pool to this many pages")
    p.add_argument("--sequential", action="store_true", help="kv_indices 0, 1, 2, ...: no random gather")
    p.add_argument("--flush", choices=["write", "read"], default="write",
                   help="L2 lead-in before every sample: write (do_bench's and the evaluator's: L2 left "
                        "full of dirty lines) or read (a 2x-L2 buffer summed: L2 left clean)")
    p.add_argument("--torch", action="store_true",
                   help="also time the PyTorch calls bench/baselines_vs_torch.py compares with (its extras, "
                        "e.g. SDPA on contiguous KV) on the same shapes, do_bench median, as columns")
    p.add_argument("--workloads", help="comma-separated uuid prefixes: only these workloads")
    p.add_argument("--scored", action="store_true", help="only the definition's scored_workloads")
    p.add_argument("--check-only", action="store_true",
                   help="check every variant and time nothing: one call each, e.g. under ncu")
    p.add_argument("--rounds", type=int, default=1,
                   help="time the variants in this many rounds, the order reversed every other round, and "
                        "report each one's median over the rounds: on long calls the card's clock drifts "
                        "while it is timed, which one pass in a fixed order charges to the later variants")
    p.add_argument("--kernels", action="store_true",
                   help="also time each kernel of a variant (torch.profiler, 20 calls, mean device time)")
    opts = p.parse_args()
    if opts.rounds < 1:
        p.error("--rounds must be at least 1")

    definition = json.load(open(os.path.join(opts.task, "definition.json")))
    workloads = [json.loads(l)["workload"] for l in open(os.path.join(opts.task, "workloads.jsonl")) if l.strip()]
    if opts.scored:
        scored = set(definition.get("scored_workloads", []))
        workloads = [w for w in workloads if w["uuid"] in scored]
    if opts.workloads:
        prefixes = opts.workloads.split(",")
        workloads = [w for w in workloads if any(w["uuid"].startswith(x) for x in prefixes)]
    if not workloads:
        raise SystemExit("kernel_lab: no workload left after --scored / --workloads")
    rule = task_rule.rule_of(definition)  # judged as the evaluator judges: bench/task_rule.py
    Args = args_struct(open(opts.header).read())
    reference = Kernel(opts.reference, Args)
    variants = [(v.split("=", 1)[0], Kernel(v.split("=", 1)[1], Args)) for v in opts.variants]
    consts = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    sizes = {w["uuid"]: int(workspace_bytes(definition, {**consts, **w["axes"]})) for w in workloads}
    allocated = (opts.workspace_mib << 20) if opts.workspace_mib is not None else max(max(sizes.values()), 1 << 20)
    workspace = torch.empty(allocated, dtype=torch.uint8, device="cuda")
    flush_buffer = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32,
                              device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    names = [n for n, _ in variants]
    torch_setup = None
    if opts.torch:
        import baselines_vs_torch
        torch_setup = baselines_vs_torch.SETUPS[os.path.basename(os.path.normpath(opts.task))]
    print("| workload | " + " | ".join(f"{n} us" for n in names) + " | " + " | ".join(f"{n} GB/s" for n in names) + " |")
    print("|---" * (1 + 2 * len(names)) + "|")
    for w in workloads:
        axes, tensors, scalars, outputs = workload_inputs(definition, w, gen, opts.pages, opts.sequential)
        # What the evaluator passes: the definition's workspace_bytes for these axes (a kernel may
        # size its split by it), from the one allocation.
        size = sizes[w["uuid"]]
        if size > workspace.numel():
            raise SystemExit(f"kernel_lab: workload {w['uuid'][:8]} needs {size} workspace bytes, more than "
                             f"--workspace-mib {opts.workspace_mib}")
        reference.bind(axes, tensors, scalars, outputs, workspace, size)()
        torch.cuda.synchronize()
        expected = {k: v.clone() for k, v in outputs.items()}
        moved = traffic_bytes(definition, axes, tensors, outputs)
        row = {"workload": w["uuid"][:8], "axes": w["axes"], "bytes": moved, "variants": {}}
        calls = {}
        for name, kernel in variants:
            call = calls[name] = kernel.bind(axes, tensors, scalars, outputs, workspace, size)
            for t in outputs.values():
                t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-1)
            call()
            torch.cuda.synchronize()
            ok, worst = True, 0.0
            for k, exp in expected.items():
                verdict = task_rule.judge(outputs[k], exp, rule)
                worst = max(worst, verdict["max_abs_error"])
                ok = ok and verdict["within_tolerance"]
            row["variants"][name] = {"us": float("nan"), "ok": ok, "max_err": worst}
            if opts.rounds == 1:  # one pass: each variant timed right after its check, as always
                time_variants(row, calls, [name], opts, flush_buffer)
        for r in range(opts.rounds if opts.rounds > 1 else 0):
            time_variants(row, calls, names if r % 2 == 0 else names[::-1], opts, flush_buffer)
        for name in names if opts.rounds > 1 else []:
            row["variants"][name]["us"] = statistics.median(row["variants"][name]["rounds"])
        if torch_setup:
            _, _, *more = torch_setup(w, definition)
            for label, fn in (more[0] if more else {}).items():
                row.setdefault("torch", {})[label] = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
        rows.append(row)
        cells = [f"{row['variants'][n]['us']:.2f}" + ("" if row["variants"][n]["ok"] else " WRONG") for n in names]
        rates = [f"{moved / row['variants'][n]['us'] / 1e3:.0f}" for n in names]
        extra = "".join(f" {k}: {v:.2f} us ({v / row['variants'][names[-1]]['us']:.2f}x of {names[-1]})"
                        for k, v in row.get("torch", {}).items())
        print(f"| {row['workload']} | " + " | ".join(cells) + " | " + " | ".join(rates) + " |" + extra, flush=True)
        for n in names if opts.kernels and not opts.check_only else []:
            print("    " + n + ": " + ", ".join(f"{k} {v:.1f}" for k, v in row["variants"][n]["kernels"].items()))
        del tensors, outputs, expected
        torch.cuda.empty_cache()
    if not opts.check_only:
        for n in names:  # TriMul's score: the geometric mean of the latencies
            us = [r["variants"][n]["us"] for r in rows]
            print(f"geomean latency of {n}: {math.exp(sum(map(math.log, us)) / len(us)):.1f} us over {len(us)} workloads")
    if len(names) > 1 and not opts.check_only:
        for n in names[1:]:
            ratios = [r["variants"][names[0]]["us"] / r["variants"][n]["us"] for r in rows]
            print(f"geomean {names[0]} / {n}: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")
    if opts.json:
        json.dump(rows, open(opts.json, "w"), indent=1)
    return 0 if all(v["ok"] for r in rows for v in r["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
