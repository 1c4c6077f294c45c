#!/usr/bin/env python3
"""Reads an export's flashinfer-bench/ folder with FlashInfer-Bench's own data models.

FlashInfer-Bench itself (its builders, benchmark and validator) needs PyTorch with CUDA,
flashinfer-python and apache-tvm-ffi, which neither the development machine nor the GPU machine
has. Its data layer needs only pydantic 2: this loads that layer from a checkout of its source
(without the package's __init__, which pulls in the rest) and parses every solution, trace and
workload line of the export the way `TraceSet.from_path` does, then checks what a dataset needs
to hang together: every trace names a solution that exists, every workload line is a workload
trace, every solution's entry point is among its sources, every safetensors input is a file of
the dataset, and (when the export has definitions/) every solution's definition is one of them. Exit 0 when all of it holds, 1 with the reasons otherwise, 2 on usage errors.

  python3 scripts/fib_load_check.py --fib-source /path/to/flashinfer-bench EXPORT/flashinfer-bench

(A development check, not part of the test suite: FlashInfer-Bench's source is not in this
repository and CI has no copy of it.)
"""
import argparse
import importlib
import sys
import types
from pathlib import Path


def load_data_layer(source):
    """flashinfer_bench.data.{solution,trace,json_utils,definition} from the checkout at `source`."""
    root = Path(source) / "flashinfer_bench"
    if not (root / "data" / "solution.py").is_file():
        raise SystemExit("fib_load_check: %s is not a FlashInfer-Bench checkout (no flashinfer_bench/data)" % source)
    for name, path in (("flashinfer_bench", root), ("flashinfer_bench.data", root / "data")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]  # submodules import; the package's own __init__ does not run
        sys.modules[name] = package
    solution = importlib.import_module("flashinfer_bench.data.solution")
    trace = importlib.import_module("flashinfer_bench.data.trace")
    json_utils = importlib.import_module("flashinfer_bench.data.json_utils")
    definition = importlib.import_module("flashinfer_bench.data.definition")
    return solution, trace, json_utils, definition


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fib-source", required=True, help="a checkout of flashinfer-bench")
    parser.add_argument("dataset", help="the export's flashinfer-bench folder")
    args = parser.parse_args(argv)
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        print("fib_load_check: %s is not a folder" % dataset, file=sys.stderr)
        return 2
    try:
        solution_mod, trace_mod, json_utils, definition_mod = load_data_layer(args.fib_source)
    except ImportError as e:
        print("fib_load_check: FlashInfer-Bench's data layer does not import here: %s" % e, file=sys.stderr)
        return 2
    problems = []
    definitions = {}
    for path in sorted((dataset / "definitions").rglob("*.json")):
        try:
            d = json_utils.load_json_file(definition_mod.Definition, path)
        except Exception as e:
            problems.append("%s: not a Definition: %s" % (path, e))
            continue
        if d.name in definitions:
            problems.append("%s: a second definition named %s" % (path, d.name))
        definitions[d.name] = d
    solutions = {}
    for path in sorted((dataset / "solutions").rglob("*.json")):
        try:
            s = json_utils.load_json_file(solution_mod.Solution, path)
        except Exception as e:  # pydantic's ValidationError and file errors alike
            problems.append("%s: not a Solution: %s" % (path, e))
            continue
        if s.name in solutions:
            problems.append("%s: a second solution named %s" % (path, s.name))
        solutions[s.name] = s
        entry_file = s.spec.entry_point.split("::")[0]
        if entry_file not in {src.path for src in s.sources}:
            problems.append("%s: entry point %s is not among its sources" % (path, s.spec.entry_point))
    counts = {"workloads": 0, "traces": 0}
    for kind in ("workloads", "traces"):
        for path in sorted((dataset / kind).rglob("*.jsonl")):
            try:
                lines = json_utils.load_jsonl_file(trace_mod.Trace, path)
            except Exception as e:
                problems.append("%s: not Trace lines: %s" % (path, e))
                continue
            for n, t in enumerate(lines, 1):
                counts[kind] += 1
                where = "%s:%d" % (path, n)
                if (kind == "workloads") != t.is_workload_trace():
                    problems.append("%s: %s a workload trace" % (where, "not" if kind == "workloads" else "is"))
                if kind == "traces" and t.solution not in solutions:
                    problems.append("%s: names solution %s, which the dataset lacks" % (where, t.solution))
                for name, spec in t.workload.inputs.items():
                    if getattr(spec, "type", "") == "safetensors" and not (dataset / spec.path).is_file():
                        problems.append("%s: input %s names %s, which is not in the dataset" % (where, name, spec.path))
    # FlashInfer-Bench runs a solution only beside its definition; an export writes it where the
    # task has a PyTorch reference (reference.py), and says why not otherwise.
    if definitions:
        for s in solutions.values():
            if s.definition not in definitions:
                problems.append("solution %s: its definition %s is not in the dataset" % (s.name, s.definition))
    print("read with FlashInfer-Bench's data models: %d definitions, %d solutions, %d workload lines, %d trace lines"
          % (len(definitions), len(solutions), counts["workloads"], counts["traces"]))
    for p in problems:
        print("problem: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
