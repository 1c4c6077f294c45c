#!/usr/bin/env python3
"""A scripted LLM for `ksearch run --provider command` on a real task and a real GPU.

It lets a short search exercise the whole product on a task's own kernels without a model:
the planner starts the tree with one intent per tuning knob of the task's baseline.cu plus a
correct but slow candidate (the task's reference.cu) and one that does not compile; later
planner calls change nothing. The coder answers an intent with the source it names:

  [[knob NAME=VALUE,...]]  baseline.cu with those #defines in front
  [[reference]]            reference.cu (correct, slow: the verdict must still be PASSED)
  [[broken]]               a file that does not compile (COMPILE_ERROR)
  [[file PATH]]            the file at PATH (fenced as cuda, cpp or python by its extension)

Environment: KS_SCRIPTED_TASK (the task folder), KS_SCRIPTED_KNOBS (knob sets separated by
';', each "NAME=VALUE,NAME=VALUE"; none: the baseline as it is), KS_SCRIPTED_REFERENCE=0 leaves
the reference candidate out, KS_SCRIPTED_FILES (paths separated by ';': one intent per file
instead of the knobs and the reference; [[broken]] is then a Python syntax error).
For throughput benchmarks: KS_SCRIPTED_GROW=1 answers every later planner call with two
refinements (knob sets) of the node that ended, so the frontier stays full; KS_SCRIPTED_VARY=1 makes every CUDA answer a new program (a comment
from the prompt's hash, so each is compiled, never a cache hit), KS_SCRIPTED_DELAY=S answers
after S seconds, as a model's latency.
Request JSON on stdin, {"text", "model", "usage"} out.
"""
import hashlib
import json
import os
import re
import sys
import time


def planner(prompt):
    edit = {"reasoning": "scripted", "insert": [], "update": [], "prune": []}
    files = [f for f in os.environ.get("KS_SCRIPTED_FILES", "").split(";") if f]
    if "Start the tree" in prompt and files:
        for i, f in enumerate(files):
            edit["insert"].append({"parent": "root", "intent": f"[[file {f}]] {os.path.basename(f)}",
                                   "priority": round(0.9 - 0.1 * i, 2), "rationale": "a prepared candidate"})
        edit["insert"].append({"parent": "root", "intent": "[[broken]] an unfinished rewrite",
                               "priority": 0.2, "rationale": "does not parse"})
    elif os.environ.get("KS_SCRIPTED_GROW") == "1" and "Start the tree" not in prompt:
        # A world model that keeps the frontier full: two refinements of the node that ended
        # (or, asked to fill an empty frontier, of the root), each a knob set of its own.
        m = re.search(r"The action that just ended: (n\d+)", prompt)  # passed; else under the root
        parent = m.group(1) if m else "root"
        knobs = [k for k in os.environ.get("KS_SCRIPTED_KNOBS", "").split(";") if k] or [""]
        salt = int(hashlib.sha1(prompt.encode()).hexdigest()[:6], 16)
        for i in range(2):
            k = knobs[(salt + i) % len(knobs)]
            edit["insert"].append({"parent": parent, "intent": f"[[knob {k}]] refine {parent} with {k or 'its defaults'}",
                                   "priority": 0.6 - 0.1 * i, "rationale": "a tuning knob"})
    elif "Start the tree" in prompt:
        knobs = [k for k in os.environ.get("KS_SCRIPTED_KNOBS", "").split(";") if k] or [""]
        for i, k in enumerate(knobs):
            edit["insert"].append({"parent": "root", "intent": f"[[knob {k}]] the baseline with {k or 'its defaults'}",
                                   "priority": round(0.9 - 0.1 * i, 2), "rationale": "a tuning knob"})
        if os.environ.get("KS_SCRIPTED_REFERENCE", "1") != "0":  # slow on large workloads
            edit["insert"].append({"parent": "root", "intent": "[[reference]] the plain reference kernel",
                                   "priority": 0.3, "rationale": "correct but slow"})
        edit["insert"].append({"parent": "root", "intent": "[[broken]] an unfinished rewrite",
                               "priority": 0.2, "rationale": "does not compile"})
    # The world model may insert only so many nodes per edit ("up to N intents"); an edit with more
    # is refused, and a search of many knob sets would then start from fallback nodes only.
    limit = re.search(r"up to (\d+) intents", prompt)
    if limit:
        edit["insert"] = edit["insert"][:int(limit.group(1))]
    return "```json\n" + json.dumps(edit, indent=1) + "\n```\n"


def coder(prompt):
    task = os.environ["KS_SCRIPTED_TASK"]
    m = re.search(r"Intent(?: to implement)? \((n\d+)\): ([^\n]*)", prompt)
    intent = m.group(2) if m else ""
    files = [f for f in os.environ.get("KS_SCRIPTED_FILES", "").split(";") if f]
    f = re.search(r"\[\[file ([^\]]*)\]\]", intent)
    if f or (files and "[[broken]]" not in intent):  # a refinement of a file: the first file again
        path = f.group(1) if f else files[0]
        fence = {".cu": "cuda", ".cpp": "cpp"}.get(os.path.splitext(path)[1], "python")
        return "Here is the kernel.\n```" + fence + "\n" + open(path).read() + "```\n"
    if "[[broken]]" in intent and files:
        return "Here is the kernel.\n```python\ndef run(x)\n    return x\n```\n"
    if "[[broken]]" in intent:
        source = '#include "ks_task.h"\nextern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { return oops; }\n'
    elif "[[reference]]" in intent:
        source = open(os.path.join(task, "reference.cu")).read()
    else:
        k = re.search(r"\[\[knob ([^\]]*)\]\]", intent)
        pairs = [d for d in (k.group(1).split(",") if k else []) if "=" in d]
        defines = "".join(f"#define {d.split('=')[0]} {d.split('=')[1]}\n" for d in pairs)
        source = defines + open(os.path.join(task, "baseline.cu")).read()
    if os.environ.get("KS_SCRIPTED_VARY") == "1":
        source = f"// variant {hashlib.sha1(prompt.encode()).hexdigest()[:16]}\n" + source
    return "Here is the kernel.\n```cuda\n" + source + "```\n"


def main():
    request = json.load(sys.stdin)
    time.sleep(float(os.environ.get("KS_SCRIPTED_DELAY", "0")))
    prompt = next((m["content"] for m in request.get("messages", []) if m.get("role") == "user"), "")
    text = planner(prompt) if request.get("role") == "planner" else coder(prompt)
    print(json.dumps({"text": text, "model": request.get("model", "scripted"),
                      "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4}}))


if __name__ == "__main__":
    main()
