#!/usr/bin/env python3
"""Times the kernel of a kept ksearch runner job with an independent timer.

Reads JOBDIR/job.json (written by `ksearch eval --keep`, which also writes each input as a file
named next to its shared-memory descriptor), loads the same compiled library with ctypes, builds
the same KsArgs from the same inputs into torch CUDA buffers, and times
ks_run with triton.testing.do_bench (median, L2 cleared before every call) and, as a second
opinion, with torch CUDA events around one call after a 2x L2 flush. Prints one JSON object.
"""
import ctypes
import json
import os
import sys

import torch
from triton.testing import do_bench


def load(jobdir, name):
    path = name if name.startswith("/") else os.path.join(jobdir, name)
    with open(path, "rb") as f:
        return f.read()


def main(jobdir):
    job = json.load(open(os.path.join(jobdir, "job.json")))
    lib = ctypes.CDLL(job["library"])
    fn = lib.ks_run
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    results = []
    for call in job["calls"]:
        keep = []
        args = bytearray(job["args_size"])
        for f in job["fields"]:
            off, size, name, role = f["offset"], f["size"], f["name"], f["role"]
            if role == "input":
                t = torch.frombuffer(bytearray(load(jobdir, call["inputs"][name]["file"])), dtype=torch.uint8).cuda()
                keep.append(t)
                args[off:off + 8] = t.data_ptr().to_bytes(8, "little")
            elif role == "scalar":
                args[off:off + size] = load(jobdir, call["inputs"][name]["file"])
            elif role == "output":
                t = torch.empty(call["outputs"][name]["bytes"], dtype=torch.uint8, device="cuda")
                keep.append(t)
                args[off:off + 8] = t.data_ptr().to_bytes(8, "little")
            elif role == "axis":
                args[off:off + 8] = int(call["axes"][name]).to_bytes(8, "little", signed=True)
        ws_bytes = int(call.get("workspace_bytes", 0))
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
        abuf = ctypes.create_string_buffer(bytes(args), len(args))
        stream = torch.cuda.current_stream().cuda_stream

        def run():
            rc = fn(abuf, ws.data_ptr(), ws_bytes, stream)
            if rc != 0:
                raise RuntimeError(f"ks_run returned {rc}")

        run()
        torch.cuda.synchronize()
        do_bench_us = do_bench(run, warmup=25, rep=200, return_mode="median") * 1000.0
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for i in range(100):
            flush.fill_(i & 0xFF)
            torch.cuda.synchronize()
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0)
        samples.sort()
        results.append({"id": call["id"], "do_bench_median_us": do_bench_us, "events_median_us": samples[len(samples) // 2]})
        del keep
    print(json.dumps({"device": torch.cuda.get_device_name(0), "library": job["library"], "workloads": results}))


if __name__ == "__main__":
    main(sys.argv[1])
