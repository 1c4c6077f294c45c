#!/usr/bin/env python3
"""Adds the held-out workloads of the shipped tasks (docs/tasks.md, "Held-out workloads"), reproducibly.

Each task keeps the workloads of the paper (or of GPU MODE), over which J is taken, and gets two
more in shapes the code policy never sees: the evaluator verifies and times them, last, and an
attempt that fails one fails (a program fitted to the shown shapes, pattern 13 of
docs/security.md). They are shapes the definition allows but none of the shown workloads has:
other batch sizes and KV splits, another model width, another token count and expert offset,
another TriMul size and mask. They are not in J, so the figures of the paper stay comparable.

Run after a task's generator (scripts/make_*_workloads.py rewrites workloads.jsonl without them):
the held-out rows already in a workloads.jsonl are replaced, and definition.json's
held_out_workloads list is written, the rest of its hand-written layout kept.
Usage: python3 scripts/held_out_workloads.py
"""
import json
import math
import pathlib
import random
import uuid

from make_mla_workloads import NUM_PAGES, mla_inputs, split
from make_moe_workloads import moe_inputs
from make_trimul_workloads import trimul_inputs

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tasks"


def workload(task, tag, axes, inputs):
    return {"definition": task, "solution": None, "evaluation": None,
            "workload": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksearch/{task}/held-out/{tag}")),
                         "axes": axes, "inputs": inputs}}


def rmsnorm():
    scalar = {"type": "scalar", "value": 1e-6}
    rows = []
    for batch, hidden in ((3, 5120), (1000, 2048)):  # widths none of the shown ones has
        rows.append(workload("rmsnorm", f"b{batch}-h{hidden}", {"batch_size": batch, "hidden_size": hidden},
                             {"hidden_states": {"type": "random"}, "weight": {"type": "random"}, "eps": scalar}))
    return rows


def gqa():
    task = "gqa_paged_decode_h32_kv4_d128_ps1"
    rng = random.Random(20261205)
    rows = []
    for batch, total in ((3, 13001), (40, 20480)):  # batch sizes the captures do not have
        lengths = split(total, batch, rng)
        pages = int(total * 1.25) + 200  # a pool larger than the request, as in the shown workloads
        inputs = {"q": {"type": "random"}, "k_cache": {"type": "random"}, "v_cache": {"type": "random"},
                  "kv_indptr": {"type": "indptr", "lengths": lengths},
                  "kv_indices": {"type": "unique_indices", "high": "num_pages"},
                  "sm_scale": {"type": "scalar", "value": 1.0 / math.sqrt(128)}}
        axes = {"batch_size": batch, "num_pages": pages, "len_indptr": batch + 1, "num_kv_indices": total}
        rows.append(workload(task, f"bs{batch}-kv{total}", axes, inputs))
    return rows


def mla(prefill):
    task = "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1" if prefill else "mla_paged_decode_h16_ckv512_kpe64_ps1"
    rng = random.Random(20261206 + prefill)
    rows = []
    for batch, total_q, total_kv in ((3, 700, 2100), (27, 1500, 41000)) if prefill else ((5, 0, 4321), (33, 0, 40000)):
        kv = split(total_kv, batch, rng)
        axes = {"num_pages": NUM_PAGES, "len_indptr": batch + 1, "num_kv_indices": total_kv}
        if prefill:  # each request's queries are the last of its KV tokens
            q = split(total_q, batch, rng)
            kv = [a + b for a, b in zip(q, split(total_kv - total_q, batch, rng))]
            inputs = mla_inputs(qo_indptr=q, kv_indptr=kv)
            axes = {"total_q": total_q, **axes}
        else:
            inputs = mla_inputs(kv_indptr=kv)
            axes = {"batch_size": batch, **axes}
        rows.append(workload(task, f"bs{batch}-q{total_q}-kv{total_kv}", axes, inputs))
    return rows


def moe():
    task = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"
    rows = []
    for seq_len, offset in ((3, 96), (203, 160)):  # token counts of no capture, the offsets of others
        rows.append(workload(task, f"t{seq_len}-o{offset}", {"seq_len": seq_len}, moe_inputs(offset)))
    return rows


def trimul():
    # GPU MODE's sizes, in combinations none of its test or benchmark shapes has.
    rows = []
    for seq_len, batch, dim, nomask, dist in ((96, 3, 128, False, "cauchy"), (384, 1, 256, True, "normal")):
        rows.append(workload("trimul", f"n{seq_len}-b{batch}-c{dim}", {"batch_size": batch, "seq_len": seq_len,
                                                                      "dim": dim}, trimul_inputs(nomask, dist)))
    return rows


def write(task, held_out):
    folder = ROOT / task
    definition = folder / "definition.json"
    text = definition.read_text()
    old = set(json.loads(text).get("held_out_workloads", []))
    path = folder / "workloads.jsonl"
    kept = [line for line in path.read_text().splitlines() if json.loads(line)["workload"]["uuid"] not in old]
    path.write_text("".join(line + "\n" for line in kept) + "".join(json.dumps(r) + "\n" for r in held_out))
    ids = [r["workload"]["uuid"] for r in held_out]
    listing = '  "held_out_workloads": [\n' + ",\n".join(f'    "{u}"' for u in ids) + "\n  ],\n"
    start = text.find('  "held_out_workloads"')
    if start >= 0:
        text = text[:start] + text[text.find("],\n", start) + 3:]
    at = text.find('  "cost_model"')
    if at < 0:  # no cost model: the list goes last, after the last member (which gains a comma)
        end = text.rstrip().rfind("}")
        body = text[:end].rstrip()
        text, at = body + ",\n" + text[end:], len(body) + 2
        listing = listing.rstrip().rstrip(",") + "\n"
    definition.write_text(text[:at] + listing + text[at:])
    print(f"{path}: {len(kept)} shown, {len(held_out)} held out")


def main():
    write("rmsnorm", rmsnorm())
    write("gqa_paged_decode_h32_kv4_d128_ps1", gqa())
    write("mla_paged_decode_h16_ckv512_kpe64_ps1", mla(False))
    write("mla_paged_prefill_causal_h16_ckv512_kpe64_ps1", mla(True))
    write("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", moe())
    write("trimul", trimul())


if __name__ == "__main__":
    main()
