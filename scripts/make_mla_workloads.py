#!/usr/bin/env python3
"""Writes workloads.jsonl of the two MLA tasks (tasks/mla_paged_*), reproducibly.

The captured FlashInfer-Bench workloads keep their index tensors in safetensors blobs we do not
ship, so the shapes are rebuilt from what is known of them (docs/tasks.md, "The paper's MLA
tasks"): the batch sizes, token totals and query lengths of the captures and of K-Search's
feedback workloads, and the page pool of every capture (989,669 pages, about 1 GB of ckv cache,
so that a gather misses in L2 as it does in a server). How a total splits over the requests of a
batch is not known; the split drawn here is skewed (a few long requests, many short ones), as
serving traffic is, and fixed by a seed so that the file never changes by accident.

Usage: python3 scripts/make_mla_workloads.py   (rewrites both files in place), then
       python3 scripts/held_out_workloads.py (the held-out workloads, which this leaves out)
"""
import json
import pathlib
import random
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tasks"
NUM_PAGES = 989669
SM_SCALE = 0.1352337747812271  # 1/sqrt(192) times the YaRN mscale^2, as in the captures
DECODE = "mla_paged_decode_h16_ckv512_kpe64_ps1"
PREFILL = "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"


def split(total, parts, rng, minimum=1):
    """`parts` lengths >= minimum that add up to `total`, drawn log-uniformly (skewed)."""
    if parts == 1:
        return [total]
    weights = [2.0 ** rng.uniform(0.0, 5.0) for _ in range(parts)]
    spare = total - minimum * parts
    lengths = [minimum + int(spare * w / sum(weights)) for w in weights]
    for i in range(total - sum(lengths)):  # what the rounding dropped goes to the first ones
        lengths[i % parts] += 1
    return lengths


def workload(name, tag, axes, inputs):
    return {"definition": name, "solution": None, "evaluation": None,
            "workload": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksearch/{name}/{tag}")),
                         "axes": axes, "inputs": inputs}}


def mla_inputs(**indptr_lengths):
    """The input sources of an MLA workload, in the definition's order; the indptr tensors
    (kv_indptr, and qo_indptr for prefill) from their segment lengths."""
    inputs = {n: {"type": "random"} for n in ("q_nope", "q_pe", "ckv_cache", "kpe_cache")}
    for name in ("qo_indptr", "kv_indptr"):
        if name in indptr_lengths:
            inputs[name] = {"type": "indptr", "lengths": indptr_lengths[name]}
    inputs["kv_indices"] = {"type": "unique_indices", "high": "num_pages"}
    inputs["sm_scale"] = {"type": "scalar", "value": SM_SCALE}
    return inputs


def decode_rows():
    # (batch, total KV tokens, note). The five feedback shapes of K-Search's MLA decode runs are
    # bs16 x 14857, 17257, 12857; bs1 x 2408; bs64 x 62345. The captures span 8 to 75,145 tokens.
    shapes = [(1, 8, "shortest capture"), (1, 2408, "feedback d0da33e2"), (1, 8823, ""),
              (1, 30517, ""), (16, 3001, ""), (16, 12857, "feedback e417264f"),
              (16, 14857, "feedback bd2dae14"), (16, 17257, "feedback 84221f45"),
              (16, 9000, "two empty requests"), (64, 20311, ""),
              (64, 62345, "feedback 939f995a"), (64, 75145, "longest capture")]
    rng = random.Random(20261203)
    rows = []
    for batch, total, note in shapes:
        lengths = split(total, batch, rng)
        if note == "two empty requests":  # the definition's rule for them: zeros and lse -inf
            lengths[3] += lengths[5] + lengths[11]
            lengths[5] = lengths[11] = 0
        assert sum(lengths) == total
        inputs = mla_inputs(kv_indptr=lengths)
        axes = {"batch_size": batch, "num_pages": NUM_PAGES, "len_indptr": batch + 1,
                "num_kv_indices": total}
        rows.append(workload(DECODE, f"bs{batch}-kv{total}-{note}", axes, inputs))
    return rows


def prefill_rows():
    # (query lengths, KV lengths, note). The eight feedback shapes are given exactly; the larger
    # ones cover the captures' range up to total_q 16,384 and batches up to 56.
    rng = random.Random(20261204)
    shapes = [([1], [34], "feedback d30e4c23"), ([5], [7], "feedback 5ca61491"),
              ([17], [19], "feedback 7572654f"), ([33], [34], "feedback 55b51e96"),
              (None, (4, 52, 67), "feedback 473e30ea"), ([287], [288], "feedback 7e602557"),
              ([376], [381], "feedback bda0e743"), (None, (3, 1187, 1205), "feedback 77737de2"),
              (None, (56, 3072, 9216), "batch 56"), (None, (8, 8192, 12288), ""),
              ([16384], [16384], "one long prompt"), (None, (4, 16384, 24576), "")]
    rows = []
    for q_lens, kv_lens, note in shapes:
        if q_lens is None:
            batch, total_q, total_kv = kv_lens
            q_lens = split(total_q, batch, rng)
            prefixes = split(total_kv - total_q, batch, rng, minimum=0)
            kv_lens = [q + p for q, p in zip(q_lens, prefixes)]
        assert all(kv >= q for q, kv in zip(q_lens, kv_lens))
        batch, total_q, total_kv = len(q_lens), sum(q_lens), sum(kv_lens)
        inputs = mla_inputs(qo_indptr=q_lens, kv_indptr=kv_lens)
        axes = {"total_q": total_q, "num_pages": NUM_PAGES, "len_indptr": batch + 1,
                "num_kv_indices": total_kv}
        rows.append(workload(PREFILL, f"bs{batch}-q{total_q}-kv{total_kv}-{note}", axes, inputs))
    return rows


def main():
    for name, rows in ((DECODE, decode_rows()), (PREFILL, prefill_rows())):
        path = ROOT / name / "workloads.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{path}: {len(rows)} workloads")


if __name__ == "__main__":
    main()
