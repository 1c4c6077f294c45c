"""ksearch-pyrunner: runs one job of an untrusted Python candidate (PyTorch or Triton).

The Python twin of ksearch-runner (gpu/runner/main.cpp). It reads the same job.json and writes
the same result.jsonl lines (gpu/runner/protocol.h, docs/evaluation.md): inputs come as sealed
shared memory and are copied onto the device, outputs and workspace are poisoned before every
call, inputs are checked unchanged, the timing loop rotates input sets and its final round is
saved for the parent to verify, the L2 is flushed as the lead-in of every sample, and a sample
whose host clock shows the device busy for longer than its events (work on another stream)
counts that longer figure. It only executes, times and records raw outputs: ksearch owns the
expected outputs and decides every verdict.

The candidate defines run(...) taking the definition's inputs in order (tensors, scalars as
Python numbers) and either also its outputs, which it fills (destination-passing, as the C ABI),
or nothing more, returning the outputs (a tensor, or a tuple in definition order).

Usage: python3 ksearch_pyrunner.py --job DIR [--user-namespace]
       | --warm BACKEND --handoff FD [--unconfined] [--user-namespace] | --probe [--triton]
"""

import ctypes
import importlib.util
import inspect
import json
import math
import mmap
import os
import resource
import sys
import time
import traceback
import warnings

EXIT_OK, EXIT_USAGE, EXIT_ENVIRONMENT, EXIT_JOB_FAILED = 0, 2, 3, 4
HEAD_START_US = 150  # device time queued ahead of each timed call beyond the flush (see Device.timed)
# The GPU-memory budget, as gpu/runner/callexecutor.cpp's: besides what a call still has to
# allocate, the device keeps DEVICE_SLACK_BYTES free (the allocator's 2 MiB rounding, the
# candidate's modules, the next runner's context) and the budget for the candidate's own
# allocations, DEFAULT_GPU_MEMORY_BUDGET_BYTES unless the job sets one.
DEVICE_SLACK_BYTES = 1 << 30
DEFAULT_GPU_MEMORY_BUDGET_BYTES = 1 << 30
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # cuda.h's CUlimit
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1  # cuda.h's CUstreamAttrID


def process_age_seconds():
    """Seconds since this process was exec'd (the interpreter's own start-up included)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class Confinement:
    """What keeps the candidate from the rest of the machine, through libksearch_confine (the code
    of ksearch-runner's gpu/runner/confine.h, loaded with ctypes), in ksearch-runner's order: the
    private mount namespace and the PID namespace before torch starts a thread (a thread started
    before them would stay outside: /proc/self/task/TID/root would lead back to the writable
    system), then the filesystem and the limits once the job's folder is known. Without the library
    (a Python runner started by hand) nothing; the environment line says so."""

    def __init__(self, backend, confine, user_namespace=False):
        self.off = not confine
        self.network = self.private_mounts = self.processes = self.filesystem = False
        self.file_limit = self.memory_limit = self.process_limit = 0
        self.lib = load_confine() if confine else None
        if self.lib is None:
            return
        # A user namespace, before any thread, for the host backend, and for CUDA where ksearch
        # found that the device works in one (--user-namespace; gpu/cudausernamespace.h).
        self.network = self.lib.ks_confine_isolate_network(int(backend == "host" or user_namespace)) == 1
        self.private_mounts = self.lib.ks_confine_private_mounts() == 1
        if backend == "host" or (self.private_mounts and self.lib.ks_confine_own_proc_possible() == 1):
            self.processes = self.contain_processes()
        if self.processes and backend == "cuda" and self.lib.ks_confine_mount_own_proc() != 1:
            # A CUDA context in the namespace fails without its own /proc (confine.cpp).
            raise OSError("no /proc of the PID namespace for the CUDA context")

    def contain_processes(self):
        """The PID namespace, from a process with one thread: the two processes above the job's
        never return to Python, the job's process does, told of the fork as os.fork would."""
        api = ctypes.pythonapi
        api.PyOS_BeforeFork()
        contained = self.lib.ks_confine_contain_processes() == 1
        if contained:
            api.PyOS_AfterFork_Child()
        else:
            api.PyOS_AfterFork_Parent()  # no fork was made
        return contained

    def apply(self, job_dir, job):
        """The job's limits and filesystem, before any file of the job is opened for writing (a
        mount is not made read-only while a file on it is open so)."""
        if self.lib is None or job.get("confine", True) is False:
            return
        count = lambda key: int(job.get(key) or 0)  # absent or null: the runner's default
        self.process_limit = self.lib.ks_confine_limit_processes(count("process_limit"), int(self.processes))
        if self.private_mounts and self.processes:
            candidate = os.path.realpath(job["library"])
            readable = [candidate] + interpreter_paths()
            # The task's folder hidden too: its workloads.jsonl names the held-out shapes.
            hidden = [os.path.realpath(p) for p in job.get("hidden_paths") or []]
            self.filesystem = self.lib.ks_confine_filesystem_hiding(
                os.path.realpath(job_dir).encode(), "\n".join(readable).encode(), "\n".join(hidden).encode(),
                count("file_limit_bytes")) == 1
            job["library"] = candidate  # a relative path would now start from the job's folder
            # The search's Triton cache may be read-only now (all of it but the job's folder is,
            # even where the confinement fell short), and a job's own keeps one candidate from
            # planting compiled kernels for another (the baseline's among them).
            os.environ["TRITON_CACHE_DIR"] = os.path.join(os.path.realpath(job_dir), "triton-cache")
        file_limit, memory_limit = ctypes.c_uint64(0), ctypes.c_uint64(0)
        self.lib.ks_confine_limit_resources(count("file_limit_bytes"), count("memory_limit_bytes"),
                                            ctypes.byref(file_limit), ctypes.byref(memory_limit))
        self.file_limit, self.memory_limit = file_limit.value, memory_limit.value

    def environment(self):
        """The environment line's confinement fields (gpu/runner/protocol.h's EnvironmentLine)."""
        return {"network_isolated": self.network, "processes_contained": self.processes,
                "filesystem_confined": self.filesystem, "file_limit_bytes": self.file_limit,
                "memory_limit_bytes": self.memory_limit, "process_limit": self.process_limit,
                "confinement_off": self.off}


def interpreter_paths():
    """What the interpreter reads from after the filesystem is narrowed: its library folders and
    import path, kept readable where they lie under a hidden home folder (a virtual environment,
    conda, ~/.local: torch's lazily imported modules, triton and its ptxas, the nvidia-* wheels'
    libraries). Not its prefixes, which may be a home folder's ~/.local; the runner also refuses
    any path that holds a hidden folder or the job's (the working directory on the import path)."""
    import sysconfig
    installed = sysconfig.get_paths()
    paths = []
    for p in [installed.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")] \
            + [sysconfig.get_config_var("LIBDIR")] + list(sys.path):
        if p and os.path.isabs(p) and os.path.exists(p) and "\n" not in p:
            real = os.path.realpath(p)
            if real not in paths:
                paths.append(real)
    return sorted(paths, key=len)  # parents first: one bound back shows its children


def load_confine():
    """libksearch_confine (gpu/runner/confinelib.cpp) from $KSEARCH_CONFINE_LIBRARY, or None.
    Loaded as a PyDLL: its calls hold the interpreter's lock, which a fork must not find released."""
    path = os.environ.get("KSEARCH_CONFINE_LIBRARY")
    if not path:
        return None
    try:
        lib = ctypes.PyDLL(path)
    except OSError as e:
        print("ksearch-pyrunner: cannot load %s: %s" % (path, e), file=sys.stderr)
        return None
    u64 = ctypes.c_uint64
    lib.ks_confine_limit_processes.argtypes = [u64, ctypes.c_int]
    lib.ks_confine_limit_processes.restype = u64
    lib.ks_confine_filesystem_hiding.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, u64]
    lib.ks_confine_limit_resources.argtypes = [u64, u64, ctypes.POINTER(u64), ctypes.POINTER(u64)]
    lib.ks_confine_limit_resources.restype = None
    return lib


def load_spans():
    """CUPTI spans of the work on every stream (libksearch_spans, gpu/runner/spanslib.cpp, the
    spans ksearch-runner records), or None without them: no library (a build without CUPTI),
    CUPTI refusing, or KSEARCH_CUPTI_SPANS=0. Only the host-clock check is left then."""
    path = os.environ.get("KSEARCH_SPANS_LIBRARY")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.ks_spans_collect.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int]
        lib.ks_spans_collect.restype = ctypes.c_int
        return lib if lib.ks_spans_enable() == 1 else None
    except (OSError, AttributeError):  # not there, or not the spans library
        return None


class Driver:
    """The few CUDA driver calls the harness makes itself, from the driver torch already uses (same
    process, same context). Driver calls leave the runtime's last-error state alone, so a refusal
    here never surfaces later as an error of one of torch's launches."""

    PIN_AT_LEAST = 4 << 20  # below this, page-locking costs more than it saves
    REGISTER_READ_ONLY = 0x08  # CU_MEMHOSTREGISTER_READ_ONLY: inputs are mapped read-only

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")
        self.memset_d32_async = lib.cuMemsetD32Async
        self.memset_d32_async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
        self.memset_d32_async.restype = ctypes.c_int
        self.host_register = lib.cuMemHostRegister_v2
        self.host_register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        self.host_register.restype = ctypes.c_int
        self.host_unregister = lib.cuMemHostUnregister
        self.host_unregister.argtypes = [ctypes.c_void_p]
        self.host_unregister.restype = ctypes.c_int
        self.mem_alloc = lib.cuMemAlloc_v2
        self.mem_alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.mem_alloc.restype = ctypes.c_int
        self.mem_free = lib.cuMemFree_v2
        self.mem_free.argtypes = [ctypes.c_uint64]
        self.mem_free.restype = ctypes.c_int
        self.reset_persisting_l2 = lib.cuCtxResetPersistingL2Cache
        self.reset_persisting_l2.argtypes = []
        self.reset_persisting_l2.restype = ctypes.c_int
        self.ctx_set_limit = lib.cuCtxSetLimit
        self.ctx_set_limit.argtypes = [ctypes.c_int, ctypes.c_size_t]
        self.ctx_set_limit.restype = ctypes.c_int
        self.stream_set_attribute = lib.cuStreamSetAttribute
        self.stream_set_attribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        self.stream_set_attribute.restype = ctypes.c_int
        self.pin_transfers = os.environ.get("KSEARCH_PIN_TRANSFERS") != "0"

    def pinned(self, tensor, read_only):
        """Page-locks a large host tensor (the parent's pageable shared memory) for one copy, so the
        copy engine reads or writes it directly instead of through the driver's bounce buffer, as
        ksearch-runner does (cudabackend.cpp's Pinned). A refusal leaves the copy pageable."""
        return _Pinned(self, tensor, read_only)


class _Pinned:
    def __init__(self, driver, tensor, read_only):
        self.driver, self.ptr = driver, None
        size = tensor.numel() * tensor.element_size()
        if driver.pin_transfers and size >= Driver.PIN_AT_LEAST:
            ptr = tensor.data_ptr()
            if driver.host_register(ptr, size, Driver.REGISTER_READ_ONLY if read_only else 0) == 0:
                self.ptr = ptr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.ptr is not None:
            self.driver.host_unregister(self.ptr)
        return False


def candidate_traceback(exc, limit=1500):
    """The exception with the candidate's frames only: the runner's own and importlib's say
    nothing to whoever fixes the candidate. Problems the harness found are their message alone."""
    if isinstance(exc, CallError):
        return str(exc)
    tb = traceback.TracebackException.from_exception(exc)
    frames = [f for f in tb.stack if f.filename != __file__ and not f.filename.startswith("<frozen")]
    tb.stack = traceback.StackSummary.from_list(frames)
    text = "".join(tb.format()).strip()
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


class CallError(Exception):
    """The candidate's call failed in a way that is its own fault (a bad return value)."""


class HarnessError(Exception):
    """The harness's own device work failed (its lead-in): never the candidate's fault."""


class Device:
    """Memory, cache and timing primitives of one backend, as gpu/runner/backend.h."""

    def __init__(self, torch, backend):
        self.torch = torch
        self.cuda = backend == "cuda"
        if self.cuda:
            if not torch.cuda.is_available():
                raise RuntimeError("torch sees no CUDA device (torch " + torch.__version__ + ")")
            self.device = torch.device("cuda")
            self.stream = torch.cuda.Stream()  # the candidate's current stream, as ks_run's
            props = torch.cuda.get_device_properties(0)
            self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
            self.name = props.name
            with torch.cuda.stream(self.stream):
                self.flush_buffer = torch.empty(2 * self.l2_bytes // 4, dtype=torch.int32, device=self.device)
                self.start = torch.cuda.Event(enable_timing=True)
                self.end = torch.cuda.Event(enable_timing=True)
                self.lead_start = torch.cuda.Event(enable_timing=True)  # the lead-in's own time
            self.driver = Driver()
            self.spans = load_spans()
            if self.spans:  # the lead-in's memsets are the harness's; a candidate's elsewhere count
                self.spans.ks_spans_record_memsets_but.argtypes = [ctypes.c_void_p]
                self.spans.ks_spans_record_memsets_but(self.stream.cuda_stream)
        else:
            self.spans = None
            self.device = torch.device("cpu")
            self.stream = None
            self.l2_bytes = 0
            self.name = "host CPU"
            self.flush_buffer = torch.empty(64 << 20, dtype=torch.uint8)
        self.flush_value = 0
        self.last_lead_in_us = 0.0  # the lead-in's device time in the last timed() (CUDA)
        self.expected_lead_in_us = 0.0  # launch_overhead_us' median lead-in; 0: not yet measured
        self.last_lead_in_credit_us = 0.0  # what the last timed() left out of the wall time for it
        self.head_start_buffer = None  # sized by calibrate(), once the job is here
        self.held = []  # (pointer, bytes) of device memory held from the candidate, see hold_all_but
        self.head_start_repeats = 0  # flushes instead, where the buffer would not fit

    def calibrate(self):
        """Runs on the device, so only once the job is here: a runner started ahead of its job must
        not disturb the timing of another runner on the same device while it waits. Sizes the head
        start: one memset that keeps the device busy for about HEAD_START_US."""
        if not self.cuda:
            return
        with self.torch.cuda.stream(self.stream):
            self.memset(self.flush_buffer)  # the first one pays for loading the driver's memset
            rounds = 4
            self.start.record(self.stream)
            for _ in range(rounds):
                self.memset(self.flush_buffer)
            self.end.record(self.stream)
            self.end.synchronize()
            per_flush_us = max(1.0, self.start.elapsed_time(self.end) * 1000.0 / rounds)
            words = int(self.flush_buffer.numel() * HEAD_START_US / per_flush_us)
            words = max(1, min(words, (1 << 30) // 4))  # at most 1 GiB, whatever the device's rate
            try:
                self.head_start_buffer = self.torch.empty(words, dtype=self.torch.int32, device=self.device)
            except RuntimeError:  # short of memory: the flush alone, repeated
                self.head_start_buffer = None
                self.head_start_repeats = math.ceil(HEAD_START_US / per_flush_us)

    def memset(self, buffer):
        """One memset through the driver (torch's fill_ is a kernel, which the spans would count as
        the candidate's)."""
        rc = self.driver.memset_d32_async(buffer.data_ptr(), self.flush_value, buffer.numel(),
                                          self.stream.cuda_stream)
        if rc != 0:
            raise HarnessError("cuMemsetD32Async of the harness's lead-in failed with CUresult %d" % rc)

    def context(self):
        return self.torch.cuda.stream(self.stream) if self.cuda else _NullContext()

    def pinned(self, tensor, read_only):
        return self.driver.pinned(tensor, read_only) if self.cuda else _NullContext()

    def synchronize(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def free_bytes(self):
        if not self.cuda:
            return None
        try:
            return self.torch.cuda.mem_get_info()[0]
        except (RuntimeError, AttributeError):
            return None

    def hold_all_but(self, keep_free):
        """Holds the device's free memory but keep_free bytes, in chunks that stay from call to call
        (each hold gives back or takes only the difference), as cudabackend.cpp's
        holdDeviceMemoryBut. Taken through the driver, outside torch's caching allocator, so the
        candidate cannot be handed it back by torch; torch's own cache is emptied first, or blocks
        the candidate freed in an earlier call would be usable beyond the budget."""
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()
        free = self.free_bytes()
        if free is None:
            return
        while free < keep_free and self.held:  # the last taken first: the smallest
            self.driver.mem_free(self.held.pop()[0])
            free = self.free_bytes() or keep_free
        page, chunk = 2 << 20, 4 << 30
        want = lambda: min(chunk, max(0, free - keep_free) // page * page)
        size = want()
        while size >= page:
            ptr = ctypes.c_uint64(0)
            if self.driver.mem_alloc(ctypes.byref(ptr), size) != 0:  # the driver may give less than it reports free
                size = size // 2 // page * page
                continue
            self.held.append((ptr.value, size))
            free = self.free_bytes() or keep_free
            size = want()

    def held_bytes(self):
        return sum(size for _, size in self.held)

    def lead_in(self):
        """The flush: on CUDA queued right before the start event, after a head start of about
        HEAD_START_US, so the device is busy while the host launches (as the C++ runner and
        triton's do_bench); on the host written here."""
        self.flush_value = (self.flush_value + 1) % 251
        if not self.cuda:
            self.flush_buffer.fill_(self.flush_value)
            return
        # Two launches where memory allows: every launch from Python is host time that the device
        # must stay busy through, as it must through the candidate's own launch after them.
        if self.head_start_buffer is not None:
            self.memset(self.head_start_buffer)
        else:
            for _ in range(self.head_start_repeats):
                self.memset(self.flush_buffer)
        self.memset(self.flush_buffer)

    def undo_persisting_l2(self):
        """A persisting access-policy window on the harness's stream, or a persisting carve-out,
        would keep a working set in L2 across the flush: undone before every timed call, as
        ksearch-runner's flushCaches. Return codes are not checked: a device without persisting L2
        refuses, and then there is nothing to undo."""
        no_window = (ctypes.c_char * 64)()  # CUstreamAttrValue, zeroed: num_bytes 0
        self.driver.stream_set_attribute(self.stream.cuda_stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                         ctypes.byref(no_window))
        self.driver.reset_persisting_l2()
        self.driver.ctx_set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)

    def untimed_flush(self):
        """Before a timed lead-in (CUDA): the call's dirty lines are written back here, off the clock,
        so the lead-in starts from the state launch_overhead_us measured it in and its bound is tight
        (ksearch-runner's CallTimer::untimedFlush). Waited for by timed()."""
        self.flush_value = (self.flush_value + 1) % 251
        self.memset(self.flush_buffer)

    def timed(self, call):
        """Runs call() once; returns (device_us, wall_us, result). Wall time runs from before the
        launch to the whole device being idle, so work on any stream is in it, less the lead-in's
        device time (kept in last_lead_in_us), but at most what launch_overhead_us' rounds took
        for it plus a margin: a lead-in stretched past that had the candidate's work beside it
        (ksearch-runner's leadInCreditMicros)."""
        if not self.cuda:
            self.lead_in()
            t0 = time.perf_counter()
            result = call()
            wall = (time.perf_counter() - t0) * 1e6
            return wall, wall, result
        self.undo_persisting_l2()
        self.untimed_flush()
        # Nothing earlier may still run anywhere on the device when the clock starts: it would
        # delay the lead-in and be charged to the call by the host clock. With the harness's stream
        # idle, whatever else still runs is a candidate's, launched by a thread of its own between
        # samples: the spans' window opens before the wait and counts it (devicespans.h).
        self.stream.synchronize()
        spans = self.spans
        if spans:
            spans.ks_spans_open()
        self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        # The lead-in right before the start event: the flush, then more of it as a head start, so
        # the device stays busy while Python reaches the candidate's launch (tens of microseconds
        # through a wrapper) and that host time is not timed as the kernel's, as it is not for
        # ks_run in ksearch-runner. Memsets on the harness's stream, which the spans leave out: a
        # window holds only the candidate's work, on any stream and from any thread.
        self.lead_start.record(self.stream)
        self.lead_in()
        self.start.record(self.stream)
        result = call()
        self.end.record(self.stream)
        self.torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e6
        if spans:
            spans.ks_spans_close()
        self.last_lead_in_us = self.lead_start.elapsed_time(self.start) * 1000.0
        credit = self.last_lead_in_us
        if self.expected_lead_in_us > 0:
            credit = min(credit, self.expected_lead_in_us + max(2.0, 0.05 * self.expected_lead_in_us))
        self.last_lead_in_credit_us = credit
        return self.start.elapsed_time(self.end) * 1000.0, wall - credit, result

    def collect_spans(self, windows):
        """One span per timed call since the loop began (microseconds; 0 where nothing of the
        candidate's ran), or None without spans."""
        if not self.spans or windows == 0:
            return None
        out = (ctypes.c_double * windows)()
        got = self.spans.ks_spans_collect(out, windows)
        return list(out[:min(got, windows)])

    def span_offset_us(self):
        """What the events add to the span of the same work on the harness's stream (ksearch-runner's
        spanOffsetMicros): a span that replaces a sample gets it added, so work moved to another
        stream is timed as it would be on the given one. A reduction of 8 MiB timed 21 times as a
        call; the spans are reset afterwards."""
        if not self.cuda or not self.spans:
            return 0.0
        source = self.flush_buffer[:(8 << 20) // 4]
        self.spans.ks_spans_reset()
        events = []
        with self.context():
            for _ in range(21):
                device_us, _, _ = self.timed(source.sum)
                events.append(device_us)
        spans = self.collect_spans(len(events)) or []
        self.spans.ks_spans_reset()
        gaps = [e - s for e, s in zip(events, spans) if s > 0]
        return max(0.0, statistics(gaps)["median"]) if gaps else 0.0

    def launch_overhead_us(self):
        """What the host clock adds to the lead-in and the events of an honest call (median of an
        empty one); also the lead-in such a call takes, which bounds what timed() leaves out."""
        if not self.cuda:
            return 0.0
        scratch = self.torch.empty(64, dtype=self.torch.uint8, device=self.device)
        gaps, lead_ins = [], []
        self.expected_lead_in_us = 0.0  # these rounds leave out their whole lead-in
        for i in range(50):
            device_us, wall_us, _ = self.timed(lambda: scratch.fill_(i % 256))
            gaps.append(wall_us - device_us)
            lead_ins.append(self.last_lead_in_us)
        # Each round's lead-in, like a timed call's, starts on an L2 the untimed flush left wholly
        # dirty: an honest call's lead-in takes as long.
        self.expected_lead_in_us = statistics(lead_ins)["median"]
        return statistics(gaps)["median"]

    def copy_bandwidth_gbs(self):
        if not self.cuda:
            return 0.0
        n = 256 << 20
        src = self.torch.empty(n, dtype=self.torch.uint8, device=self.device)
        dst = self.torch.empty_like(src)
        best = math.inf
        for _ in range(5):
            device_us, _, _ = self.timed(lambda: dst.copy_(src))
            best = min(best, device_us)
        return 2.0 * n / (best * 1e-6) / 1e9


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def statistics(values):
    s = {"mean": 0.0, "stdev": 0.0, "median": 0.0, "p25": 0.0, "p75": 0.0, "min": 0.0}
    if not values:
        return s
    n = len(values)
    s["mean"] = sum(values) / n
    if n > 1:
        s["stdev"] = math.sqrt(sum((x - s["mean"]) ** 2 for x in values) / (n - 1))
    v = sorted(values)

    def q(f):
        return v[int(f * (n - 1) + 0.5)]

    s.update(median=q(0.5), p25=q(0.25), p75=q(0.75), min=v[0])
    return s


class Harness:
    """One job: the candidate, its buffers and the calls, as gpu/runner/callexecutor.cpp."""

    def __init__(self, torch, job, device):
        self.torch = torch
        self.job = job
        self.dev = device
        self.fields = job["fields"]
        self.mappings = []  # shared-memory maps stay open until the process ends
        self.gpu_budget = gpu_memory_budget(job)

    # ---- buffers

    def dtype(self, name):
        torch = self.torch
        found = getattr(torch, name, None)
        if isinstance(found, torch.dtype):
            return found
        if name.startswith("float8"):
            return torch.uint8  # an older torch without fp8: the bytes, unconverted
        raise RuntimeError("dtype " + name + " is not known to torch " + torch.__version__)

    def map_shared(self, buffer, writable, what):
        nbytes = int(buffer["bytes"])
        if nbytes == 0:
            return self.torch.empty(0, dtype=self.torch.uint8)
        fd = buffer["fd"]
        if os.fstat(fd).st_size < nbytes:
            raise RuntimeError(what + ": shared buffer is shorter than " + str(nbytes) + " bytes")
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        m = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, prot=prot)
        self.mappings.append(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only maps: torch warns, and the seal enforces it
            return self.torch.frombuffer(m, dtype=self.torch.uint8)

    def typed(self, raw, field, buffer):
        shape = buffer.get("shape") or []
        return raw.view(self.dtype(field["dtype"])).view(shape)

    def noise(self, nbytes, seed):
        """Bytes no correct output is likely to equal: a 4 MiB random block repeated on the device."""
        torch = self.torch
        g = torch.Generator().manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
        block = torch.randint(0, 256, (min(nbytes, 4 << 20),), dtype=torch.uint8, generator=g)
        block = block.to(self.dev.device)
        reps = -(-nbytes // max(1, block.numel()))
        return block.repeat(reps)[:nbytes].contiguous() if nbytes else block[:0]

    def make_poison(self, outputs, seed):
        """What poison() writes from now on: noise from the seed, other for each output."""
        for salt, o in enumerate(outputs, start=1):
            o["poison"] = self.noise(o["raw"].numel(), (seed + 0x9E3779B97F4A7C15 * salt) & 0xFFFFFFFFFFFFFFFF)

    def allocate_outputs(self, call):
        outs = []
        for f in self.fields:
            if f["role"] != "output":
                continue
            spec = call["outputs"][f["name"]]
            raw = self.torch.empty(int(spec["bytes"]), dtype=self.torch.uint8, device=self.dev.device)
            outs.append({"name": f["name"], "raw": raw, "tensor": self.typed(raw, f, spec)})
        self.make_poison(outs, call.get("poison_seed", 0))
        return outs

    def upload_inputs(self, call, buffers):
        """The candidate's arguments for one input set, with pristine copies it never sees."""
        args, raws, pristine = [], [], []
        for f in self.fields:
            role = f["role"]
            if role == "input":
                spec = buffers[f["name"]]
                shared = self.map_shared(spec, False, "input " + f["name"])
                with self.dev.pinned(shared, True):
                    raw = shared.to(self.dev.device, copy=True)
                raws.append(raw)
                pristine.append(shared if not self.dev.cuda else raw.clone())
                args.append(self.typed(raw, f, spec))
            elif role == "scalar":
                spec = buffers[f["name"]]
                shared = self.map_shared(spec, False, "scalar " + f["name"])
                args.append(shared.clone().view(self.dtype(f["dtype"])).item())
        return {"args": args, "raws": raws, "pristine": pristine}

    def poison(self, outputs):
        for o in outputs:
            o["raw"].copy_(o["poison"])

    def holds_inputs_of(self, target, source):
        return all(self.torch.equal(a, b) for a, b in zip(target["raws"], source["pristine"]))

    def save_outputs(self, shared_set, outputs):
        for o in outputs:
            spec = shared_set[o["name"]]
            if int(spec["bytes"]) != o["raw"].numel():
                raise RuntimeError("output " + o["name"] + ": shared buffer size differs from the output")
            dst = self.map_shared(spec, True, "output " + o["name"])
            with self.dev.pinned(dst, False):
                dst.copy_(o["raw"])

    # ---- calls

    def bind(self, fn):
        """Destination-passing or returning, from run's signature (see the module comment)."""
        n_in = sum(1 for f in self.fields if f["role"] in ("input", "scalar"))
        n_out = sum(1 for f in self.fields if f["role"] == "output")
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return "dps"
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            return "dps"
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = [p for p in positional if p.default is p.empty]
        if len(required) <= n_in + n_out <= len(positional):
            return "dps"
        if len(required) <= n_in <= len(positional):
            return "returning"
        raise CallError(
            "%s takes %d positional parameters; it must take the %d inputs and then the %d outputs "
            "(destination-passing), or the %d inputs alone and return the outputs"
            % (self.job.get("symbol", "run"), len(positional), n_in, n_out, n_in))

    def invoker(self, fn, style, inputs, outputs):
        """A callable for one timed call, and what to do after the end event (returning style: copy
        the returned tensors into the output buffers, outside the timed region)."""
        torch = self.torch
        if style == "dps":
            tensors = [o["tensor"] for o in outputs]
            return (lambda: fn(*inputs["args"], *tensors)), (lambda result: None)

        def deliver(result):
            got = [result] if torch.is_tensor(result) else list(result) if isinstance(result, (tuple, list)) else None
            if got is None or len(got) != len(outputs):
                raise CallError("run returned %s; expected %d output tensor(s) in definition order"
                                % (type(result).__name__, len(outputs)))
            for o, g in zip(outputs, got):
                want = o["tensor"]
                if torch.is_tensor(g) and type(g) is not torch.Tensor:
                    # A subclass can defer its work to the copy below, after the end event.
                    raise CallError("returned output %s is a %s, not a torch.Tensor: a tensor subclass could "
                                    "compute when it is read, outside the timer" % (o["name"], type(g).__name__))
                if not torch.is_tensor(g) or tuple(g.shape) != tuple(want.shape) or g.dtype != want.dtype:
                    raise CallError("returned output %s is %s; expected %s %s" % (
                        o["name"], "%s %s" % (g.dtype, tuple(g.shape)) if torch.is_tensor(g) else type(g).__name__,
                        want.dtype, tuple(want.shape)))
                want.copy_(g)

        return (lambda: fn(*inputs["args"])), deliver

    def run_once(self, fn, style, inputs, outputs):
        call, deliver = self.invoker(fn, style, inputs, outputs)
        self.dev.synchronize()  # the poison lands first, whatever stream the candidate uses (as timed())
        with self.dev.context():
            deliver(call())
            self.dev.synchronize()

    def timed_once(self, fn, style, inputs, outputs):
        call, deliver = self.invoker(fn, style, inputs, outputs)
        with self.dev.context():
            device_us, wall_us, result = self.dev.timed(call)
            deliver(result)
            self.dev.synchronize()
        return device_us, wall_us

    def needed_bytes(self, call, with_timing_sets=True):
        inputs = sum(int(b["bytes"]) for n, b in call["inputs"].items() if self.role(n) == "input")
        if with_timing_sets and self.job["bench"].get("enabled"):
            for s in call.get("timing_inputs", []):
                inputs += sum(int(b["bytes"]) for n, b in s.items() if self.role(n) == "input")
        outputs = sum(int(b["bytes"]) for b in call["outputs"].values())
        return 2 * inputs + (3 if call.get("repeat_outputs") else 2) * outputs

    def role(self, name):
        return next((f["role"] for f in self.fields if f["name"] == name), "")

    def execute(self, fn, call):
        t_call = time.perf_counter()
        line = {"id": call["id"], "status": "harness_error", "return_code": 0, "wall_us": 0.0,
                "inputs_unchanged": True, "total_s": 0.0}
        free = self.dev.free_bytes()
        if free is not None:
            free += self.dev.held_bytes()
        need = self.needed_bytes(call)
        if free is not None and need > free:
            line["status"] = "error"
            line["message"] = ("does not fit in GPU memory: this workload needs %.2f GiB on the device (inputs and "
                               "their pristine copies, outputs and their poison), and %.2f GiB is free; run it on a "
                               "larger GPU, or leave it out with --workloads" % (need / 2**30, free / 2**30))
            return line
        untimed = {}
        lap_start = [time.perf_counter()]

        def lap(part):  # each part of the untimed work, for the overhead breakdown
            now = time.perf_counter()
            untimed[part] = untimed.get(part, 0.0) + now - lap_start[0]
            lap_start[0] = now

        def hold(still_to_allocate):  # callexecutor.cpp's: held anew once the timing sets are here
            if self.gpu_budget > 0:
                self.dev.hold_all_but(still_to_allocate + DEVICE_SLACK_BYTES + self.gpu_budget)
                lap("memory_hold")

        style = self.bind(fn)
        hold(self.needed_bytes(call, with_timing_sets=False))
        outputs = self.allocate_outputs(call)
        lap("allocate")
        first = self.upload_inputs(call, call["inputs"])
        lap("upload")
        self.poison(outputs)
        self.dev.synchronize()
        lap("poison")
        t0 = time.perf_counter()
        self.run_once(fn, style, first, outputs)
        line["wall_us"] = (time.perf_counter() - t0) * 1e6
        lap("correctness_call")
        self.save_outputs(call["outputs"], outputs)
        lap("download")
        line["inputs_unchanged"] = self.holds_inputs_of(first, first)
        lap("input_check")
        if call.get("repeat_outputs"):
            # The same inputs again with other noise in the outputs (callexecutor.cpp's repeat):
            # results the same bit for bit stay here, others go to the parent.
            firsts = [o["raw"].clone() for o in outputs]
            self.make_poison(outputs, repeat_seed(call.get("poison_seed", 0)))
            self.poison(outputs)
            self.dev.synchronize()
            self.run_once(fn, style, first, outputs)
            identical = all(self.torch.equal(o["raw"], f) for o, f in zip(outputs, firsts))
            line["repeat_identical"] = identical
            if not identical:
                self.save_outputs(call["repeat_outputs"], outputs)
            line["inputs_unchanged"] = line["inputs_unchanged"] and self.holds_inputs_of(first, first)
            lap("repeat_call")
        line["status"] = "ok"
        if self.job["bench"].get("enabled") and call.get("timing_inputs"):
            hold(self.needed_bytes(call) - self.needed_bytes(call, with_timing_sets=False))
            sets = [self.upload_inputs(call, s) for s in call["timing_inputs"]]
            lap("upload")
            hold(0)
            bench = self.benchmark(fn, style, call, outputs, sets, first)
            lap("bench_setup")
            untimed["bench_setup"] = max(0.0, untimed["bench_setup"] - bench.get("warmup_seconds", 0.0)
                                         - bench.get("loop_seconds", 0.0))
            line["bench"] = bench
        line["untimed_s"] = untimed
        line["total_s"] = time.perf_counter() - t_call
        return line

    def benchmark(self, fn, style, call, outputs, sets, reference):
        """The timing loop of callexecutor.cpp's benchmark(), step for step."""
        b = self.job["bench"]
        min_samples, max_samples = int(b.get("min_samples", 10)), int(b.get("max_samples", 1000))
        max_noise, max_seconds = float(b.get("max_noise", 0.005)), float(b.get("max_seconds", 1.0))
        overhead = calibration("while calibrating the launch overhead, before the warm-up", self.dev.launch_overhead_us)
        report = {"launch_overhead_us": overhead, "device_spans": False, "inputs_unchanged": True}
        warm_start = time.perf_counter()
        warm = 0
        while warm < 3 or time.perf_counter() - warm_start < float(b.get("warmup_seconds", 0.025)):
            self.poison(outputs)
            self.run_once(fn, style, sets[warm % len(sets)], outputs)
            warm += 1
            if warm > 10000:
                break
        report.update(warmup_calls=warm, warmup_seconds=time.perf_counter() - warm_start)

        samples, device_samples, host_samples, lead_in_samples = [], [], [], []
        stretched = 0  # lead-ins past the calibrated one (Device.timed)
        offset = calibration("while calibrating the span offset, before the timed calls", self.dev.span_offset_us)
        if self.dev.spans:
            self.dev.spans.ks_spans_reset()  # windows from here on are the timed calls
        count = len(sets)
        swapped_outputs = call.get("swapped_outputs", [])
        final_total = 2 * count if len(swapped_outputs) == count else count
        final_calls, stopping, unchanged, stop = 0, False, True, "max_samples"
        loop_start = time.perf_counter()
        i = 0
        while True:
            which = i % count
            if stopping and final_calls == final_total:
                break
            swapped = stopping and final_calls >= count
            source = (sets[(which + 1) % count] if count > 1 else reference) if swapped else None
            if swapped:
                for dst, src in zip(sets[which]["raws"], source["pristine"]):
                    dst.copy_(src)
            self.poison(outputs)
            device_us, wall_us = self.timed_once(fn, style, sets[which], outputs)
            samples.append(device_us)  # judged after the loop (charge_samples); the stop rule reads events
            device_samples.append(device_us)
            host_samples.append(wall_us - overhead)
            lead_in_samples.append(self.dev.last_lead_in_us)
            stretched += 1 if self.dev.last_lead_in_credit_us < self.dev.last_lead_in_us else 0
            if stopping:
                self.save_outputs((swapped_outputs if swapped else call["timing_outputs"])[which], outputs)
                if swapped:
                    unchanged = unchanged and self.holds_inputs_of(sets[which], source)
                final_calls += 1
                i += 1
                continue
            n = len(samples)
            if n >= min_samples:
                s = statistics(samples)
                rel_err = s["stdev"] / s["mean"] / math.sqrt(n) if s["mean"] > 0 else 0.0
                if rel_err < max_noise:
                    stop = "noise"
                elif time.perf_counter() - loop_start > max_seconds:
                    stop = "time"
                elif n >= max_samples:
                    stop = "max_samples"
                else:
                    i += 1
                    continue
                stopping = True
                unchanged = all(self.holds_inputs_of(s_, s_) for s_ in sets)
                while (i + 1) % count != 0:  # align the final round: set k is the k-th of each pass
                    i += 1
                    self.poison(outputs)
                    self.run_once(fn, style, sets[i % count], outputs)
            i += 1
        # Work on any stream, as the device (CUPTI spans) or else the host clock saw it.
        spans = self.dev.collect_spans(len(samples))
        samples, side_flags = charge_samples(device_samples, host_samples, spans, offset)
        if spans is not None:
            report.update(device_spans=True, span_median_us=statistics(spans)["median"] if spans else 0.0,
                          span_offset_us=offset, span_samples_us=spans)
        s = statistics(samples)
        report.update(samples_us=samples, device_samples_us=device_samples, host_samples_us=host_samples,
                      lead_in_samples_us=lead_in_samples, stretched_lead_ins=stretched,
                      median_us=s["median"],
                      mean_us=s["mean"], stdev_us=s["stdev"], p25_us=s["p25"], p75_us=s["p75"], min_us=s["min"],
                      side_work_samples=sum(side_flags), stop=stop, loop_seconds=time.perf_counter() - loop_start,
                      inputs_unchanged=unchanged)
        return report


def charge_samples(events, host_views, spans, span_offset):
    """gpu/runner/samplerule.h's chargeSamples, rule for rule: (figure per sample, raised flags).
    Spans per sample: one that exceeds its events by max(1 us, 5 %) is charged span + span_offset.
    Then the host clock per loop, spans or not (the candidate could turn CUPTI off): when the
    median of (host view - figure so far) exceeds max(3 us, 10 %) of the median figure, each
    sample is charged the larger of the two. Read on medians, its jitter on short calls changes
    nothing unless it touches most samples."""
    samples, side = list(events), [False] * len(events)
    for k, span in enumerate((spans or [])[:len(events)]):
        if span > events[k] + max(1.0, 0.05 * events[k]) and span + span_offset > samples[k]:
            samples[k], side[k] = span + span_offset, True
    if not events or len(host_views) != len(events):
        return samples, side
    excess = statistics([h - s for h, s in zip(host_views, samples)])["median"]
    if excess <= max(3.0, 0.1 * statistics(list(samples))["median"]):
        return samples, side
    for k, h in enumerate(host_views):
        if h > samples[k]:
            samples[k], side[k] = h, True
    return samples, side


def gpu_memory_budget(job):
    """callexecutor.cpp's gpuMemoryBudget: none on the host or with confinement off."""
    if job.get("backend") != "cuda" or job.get("confine", True) is False:
        return 0
    return int(job.get("gpu_memory_budget_bytes") or 0) or DEFAULT_GPU_MEMORY_BUDGET_BYTES


def repeat_seed(poison_seed):
    """callexecutor.cpp's repeatSeed: the second correctness call's poison."""
    return (((poison_seed ^ 0xD1B54A32D192ED03) * 0xBF58476D1CE4E5B9) + 1) & 0xFFFFFFFFFFFFFFFF


def drop_privileges():
    """Before the candidate is imported: no capabilities, none to regain by exec (ksearch-runner's
    dropPrivileges: a runner started by root could otherwise read ksearch's descriptors, expected
    outputs included, through /proc). Nothing to drop for an ordinary user."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)())  # _LINUX_CAPABILITY_VERSION_3


def load_candidate(path, symbol):
    spec = importlib.util.spec_from_file_location("ks_candidate", path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load " + path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ks_candidate"] = module  # triton's JIT reads the source back through the module
    spec.loader.exec_module(module)
    fn = getattr(module, symbol, None)
    if not callable(fn):
        raise AttributeError("the module does not define a function " + symbol + "(...)")
    return fn


def calibration(phase, measure):
    """The harness's own timed rounds: a device error there is named as theirs (as in
    callexecutor.cpp's benchmark), not left to read as the candidate's next call."""
    try:
        return measure()
    except RuntimeError as e:
        raise RuntimeError("%s (%s)" % (e, phase)) from e


def is_device_error(torch, device, exc):
    """A sticky CUDA error poisons the context: the job stops after reporting it."""
    if not device.cuda:
        return False
    if "CUDA error" in str(exc) or "illegal memory access" in str(exc):
        return True
    try:
        torch.cuda.synchronize()
        return False
    except RuntimeError:
        return True


def ready_device(backend, confine=True, user_namespace=False):
    """Everything before a job: the namespaces made (unless a person turned confinement off),
    torch imported, the device context made.
    Returns (torch, device, Confinement, seconds since exec) or an exit code."""
    if backend not in ("host", "cuda"):
        print("ksearch-pyrunner: unknown backend '%s'" % backend, file=sys.stderr)
        return EXIT_USAGE
    try:
        confinement = Confinement(backend, confine, user_namespace)
    except OSError as e:
        print("ksearch-pyrunner: %s" % e, file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        import torch
    except ImportError as e:
        print("ksearch-pyrunner: cannot import torch with %s: %s" % (sys.executable, e), file=sys.stderr)
        return EXIT_ENVIRONMENT
    try:
        device = Device(torch, backend)
    except (RuntimeError, OSError, AttributeError) as e:  # no device, or no usable driver library
        print("ksearch-pyrunner: CUDA unavailable: %s" % e, file=sys.stderr)
        return EXIT_ENVIRONMENT
    return torch, device, confinement, process_age_seconds()


def read_job(job_dir):
    with open(os.path.join(job_dir, "job.json")) as f:
        return json.load(f)


def receive_job(fd):
    """The handoff (gpu/runner/protocol.h): the job folder and its descriptors, in messages with
    the descriptors attached. None when ksearch closed the socket without a job."""
    import socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
    descriptors, job_dir = {}, None
    try:
        try:
            sock.send(b"ready")  # told, not asked: a ksearch that went away is found out below
        except OSError:
            pass
        while True:
            payload, fds, flags, _ = socket.recv_fds(sock, 16384, 253)
            if not payload:
                return None
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ValueError("handoff socket: a message was cut short")
            message = json.loads(payload)
            if len(message["fds"]) != len(fds):
                raise ValueError("handoff socket: %d descriptors named, %d received" % (len(message["fds"]), len(fds)))
            for received in fds:
                os.set_inheritable(received, False)  # as the C++ runner's MSG_CMSG_CLOEXEC
            descriptors.update(zip(message["fds"], fds))
            job_dir = message["job"]
            if message["last"]:
                return job_dir, descriptors
    finally:
        sock.close()


def renumber_descriptors(job, descriptors):
    """Points every buffer of the job at the descriptor received for it (handoff.cpp's
    renumberDescriptors): a buffer whose descriptor was not handed over stops the job before the
    candidate is loaded, as in ksearch-runner."""
    for call in job["calls"]:
        sets = [call.get("inputs", {}), call.get("outputs", {}), call.get("repeat_outputs", {})]
        for key in ("timing_inputs", "timing_outputs", "swapped_outputs"):
            sets.extend(call.get(key, []))
        for buffers in sets:
            for name, buffer in buffers.items():
                if buffer["fd"] not in descriptors:
                    raise ValueError("call %s, buffer %s: descriptor %d was not handed over"
                                     % (call["id"], name, buffer["fd"]))
                buffer["fd"] = descriptors[buffer["fd"]]


def run_job(job_dir, user_namespace):
    job_dir = os.path.realpath(job_dir)  # the confined process works in it: relative would break
    job = read_job(job_dir)
    ready = ready_device(job.get("backend"), job.get("confine", True) is not False, user_namespace)
    if isinstance(ready, int):
        return ready
    return execute_job(job_dir, job, ready, time.monotonic())


def run_handed_over(backend, fd, confine, user_namespace):
    """Started ahead of its job: everything up to a ready device now, then the job from the socket."""
    os.set_inheritable(fd, False)  # nothing this process may start inherits it
    ready = ready_device(backend, confine, user_namespace)
    if isinstance(ready, int):
        return ready
    ready_at = time.monotonic()
    received = receive_job(fd)
    if received is None:
        return EXIT_OK  # ksearch no longer needs this runner
    job_dir, descriptors = received
    job = read_job(job_dir)
    renumber_descriptors(job, descriptors)
    if job.get("backend") != backend:
        print("ksearch-pyrunner: the job is for the %s backend, this runner was started for %s"
              % (job.get("backend"), backend), file=sys.stderr)
        return EXIT_USAGE
    return execute_job(job_dir, job, ready, ready_at)


def execute_job(job_dir, job, ready, ready_at):
    torch, device, confinement, startup = ready
    confinement.apply(job_dir, job)
    device.calibrate()
    results = open(os.path.join(job_dir, "result.jsonl"), "w")

    def emit(line):
        results.write(json.dumps(line) + "\n")
        results.flush()  # each line survives a crash in the next call

    env = {"id": "", "status": "environment", "startup_s": startup, "ready_monotonic_s": ready_at}
    env.update(confinement.environment())
    env["confinement_off"] = confinement.off or job.get("confine", True) is False
    env["gpu_memory_budget_bytes"] = 0 if env["confinement_off"] else gpu_memory_budget(job)
    if job["bench"].get("enabled") and job.get("measure_device"):
        env.update(device=device.name, l2_bytes=device.l2_bytes, copy_bandwidth_gbs=device.copy_bandwidth_gbs())
    emit(env)
    harness = Harness(torch, job, device)
    # The task's precision rule, the same for the baseline, the reference and every candidate.
    tf32 = bool(job.get("allow_tf32", False))
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    drop_privileges()  # after the device and the spans library are up (ksearch-runner does the same)
    # Written before the candidate's code runs, to a pipe ksearch reads as it comes: a failure
    # without it was the harness's (protocol.h's kLoadingMarker; ksearch-runner writes the same).
    sys.stdout.write("ksearch-runner: loading the kernel\n")
    sys.stdout.flush()
    try:
        fn = load_candidate(job["library"], job.get("symbol", "run"))
        harness.bind(fn)
    except BaseException as e:  # a SyntaxError, an ImportError or a SystemExit at import alike
        emit({"id": "", "status": "load_error", "message": candidate_traceback(e)})
        results.close()
        return EXIT_JOB_FAILED
    exit_code = EXIT_OK
    for call in job["calls"]:
        emit({"id": call["id"], "status": "started"})
        try:
            # Everything on the harness's stream (poison, refills, checks, copies back), so the
            # candidate's work on it is ordered after what prepares it.
            with device.context():
                line = harness.execute(fn, call)
        except BaseException as e:
            line = {"id": call["id"], "status": "error", "message": candidate_traceback(e), "return_code": 1,
                    "wall_us": 0.0, "inputs_unchanged": True, "total_s": 0.0}
            if is_device_error(torch, device, e):
                line["status"] = "device_error"
            elif isinstance(e, HarnessError):
                line["status"] = "harness_error"
                line["message"] = str(e)
        emit(line)
        if line["status"] == "device_error":
            exit_code = EXIT_JOB_FAILED
            break
    emit({"id": "", "status": "finished"})
    results.close()
    # ksearch judges once the output is closed, while the process and its context go down.
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            stream.flush()
            os.close(fd)
        except (OSError, ValueError):  # the candidate closed it already: leave all the same
            pass
    # Leave without running what the candidate may have registered (atexit, finalizers).
    os._exit(exit_code)


def probe(need_triton):
    """What this python3 offers, as one JSON line (ksearch's environment check reads it)."""
    info = {"python": sys.version.split()[0], "executable": sys.executable}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = bool(torch.cuda.is_available())
        if info["cuda"]:
            info["device"] = torch.cuda.get_device_name(0)
    except ImportError as e:
        info["missing"] = "torch"
        info["error"] = str(e)
    if need_triton and "missing" not in info:
        try:
            import triton
            info["triton"] = triton.__version__
        except ImportError as e:
            info["missing"] = "triton"
            info["error"] = str(e)
    print(json.dumps(info))
    return EXIT_OK


def main(argv):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing candidate must not litter core files
    if len(argv) >= 2 and argv[1] == "--probe":
        return probe("--triton" in argv[2:])
    handed_over = len(argv) >= 5 and argv[1] == "--warm" and argv[3] == "--handoff"
    job = len(argv) >= 3 and argv[1] == "--job"
    options = argv[5:] if handed_over else argv[3:]
    allowed = ("--unconfined", "--user-namespace") if handed_over else ("--user-namespace",)
    if not (handed_over or job) or any(o not in allowed for o in options):
        print("usage: ksearch_pyrunner.py --job DIR [--user-namespace] | --warm BACKEND --handoff FD [--unconfined] "
              "[--user-namespace] | --probe [--triton]", file=sys.stderr)
        return EXIT_USAGE
    user_namespace = "--user-namespace" in options
    try:
        if handed_over:
            return run_handed_over(argv[2], int(argv[4]), "--unconfined" not in options, user_namespace)
        return run_job(argv[2], user_namespace)
    except (OSError, KeyError, ValueError, TypeError) as e:
        print("ksearch-pyrunner: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
