#!/usr/bin/env python3
"""Whether a persisting-L2 window would speed up the rmsnorm Triton kernel under the harness's
flush if nothing undid it, and whether the runners' undo takes it away: the question
tst_gpupython::persistingL2DoesNotHelp (and tst_gpuevaluator's C++ twin) can only answer if the
window helps at all. Outside the harness, on torch tensors, timed by events around each call
after a flush of twice the L2 on the same stream; two input sets in turn, as the evaluator's
timing loop has. Prints one line a mode (median and minimum of the samples) and the ratios.

    python3 bench/persisting_l2_probe.py [--rows 2048] [--cols 4096] [--samples 60]
"""
import argparse
import ctypes
import importlib.util
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108
NORMAL, STREAMING, PERSISTING = 0, 1, 2


class Window(ctypes.Structure):  # CUaccessPolicyWindow inside the 64-byte CUstreamAttrValue
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hit_ratio", ctypes.c_float),
                ("hit_prop", ctypes.c_int), ("miss_prop", ctypes.c_int), ("pad", ctypes.c_char * 32)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--samples", type=int, default=60)
    args = ap.parse_args()

    spec = importlib.util.spec_from_file_location(
        "rmsnorm_triton", os.path.join(HERE, "..", "tests", "data", "python", "rmsnorm_triton.py"))
    kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernel)
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.cuda.init()  # cuInit: before it the driver answers every query with an error and no value
    most = ctypes.c_int(0)
    rc = cuda.cuDeviceGetAttribute(ctypes.byref(most), CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0)
    if rc != 0:
        sys.exit("cuDeviceGetAttribute(MAX_PERSISTING_L2_CACHE_SIZE) failed with CUresult %d" % rc)
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 50 << 20))
    print("%s: L2 %.1f MiB, persisting carve-out at most %.1f MiB; %d x %d bf16 inputs (%.1f MiB a set, two sets)"
          % (props.name, l2 / 2**20, most.value / 2**20, args.rows, args.cols, args.rows * args.cols * 2 / 2**20))

    stream = torch.cuda.Stream()
    sets = []
    with torch.cuda.stream(stream):
        for _ in range(2):
            x = torch.randn(args.rows, args.cols, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(args.cols, device="cuda", dtype=torch.bfloat16)
            sets.append((x, w, torch.empty_like(x)))
        flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    handle = ctypes.c_void_p(stream.cuda_stream)

    def set_window(x, prop):
        cuda.cuCtxSetLimit(ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE), ctypes.c_size_t(most.value))
        size = x.numel() * x.element_size()
        # Two sets alternate: a window kept from one call to the next on the same set leaves room
        # for the other's.
        window = Window(x.data_ptr(), min(size, most.value // 2), 1.0, prop, STREAMING)
        cuda.cuStreamSetAttribute(handle, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(window))

    def undo():  # what the runners do before every timed call
        off = (ctypes.c_char * 64)()
        cuda.cuStreamSetAttribute(handle, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(off))
        cuda.cuCtxResetPersistingL2Cache()
        cuda.cuCtxSetLimit(ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE), ctypes.c_size_t(0))

    def run(prop, undo_first):
        samples = []
        with torch.cuda.stream(stream):
            for i in range(args.samples + 5):
                x, w, y = sets[i % 2]
                if undo_first:
                    undo()
                flush.fill_(i)
                start.record(stream)
                if prop is not None:
                    set_window(x, prop)
                kernel.launch(x, w, 1e-6, y)
                end.record(stream)
                end.synchronize()
                if i >= 5:
                    samples.append(start.elapsed_time(end) * 1000.0)
        undo()
        torch.cuda.synchronize()
        return statistics.median(samples), min(samples)

    modes = [("plain", None, False), ("window, normal hits", NORMAL, False),
             ("window, persisting hits", PERSISTING, False), ("persisting, undone before each", PERSISTING, True)]
    results = {}
    for name, prop, undo_first in modes:
        results[name] = run(prop, undo_first)
        print("%-32s median %8.2f us   min %8.2f us" % ((name,) + results[name]))
    normal = results["window, normal hits"][0]
    print("persisting / normal window: %.3f (the window would help where this is under 1)"
          % (results["window, persisting hits"][0] / normal))
    print("undone / normal window:     %.3f (the runners' undo takes the help away where this is about 1)"
          % (results["persisting, undone before each"][0] / normal))


if __name__ == "__main__":
    main()
