#!/usr/bin/env python3
"""Writes the workloads.jsonl of the FP8 MoE task, reproducibly.

The captured FlashInfer-Bench workloads have these token counts (1 to 14,107; K-Search's feedback
set is 1, 7, 14, 16 and 32), local expert offsets of 0 to 224 in steps of 32 and a routed scaling
factor of 2.5. Their routing logits are captures we do not ship, so they are drawn here (float32
normal), like every other input (FlashInfer-Bench draws activations, weights and scales from randn;
fp8 draws are clamped to [-2, 2]).
Usage: python3 scripts/make_moe_workloads.py, then python3 scripts/held_out_workloads.py (the held-out
workloads, which this leaves out)
"""
import json
import pathlib
import uuid

NAME = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"
PATH = pathlib.Path(__file__).resolve().parent.parent / "tasks" / NAME / "workloads.jsonl"
SEQ_LENS = [1, 7, 14, 15, 16, 32, 52, 55, 59, 62, 80, 901, 11948, 14107]


def moe_inputs(offset):
    """The input sources of a workload with this local expert offset (scripts/held_out_workloads.py
    uses them too)."""
    inputs = {n: {"type": "random"} for n in (
        "routing_logits", "routing_bias", "hidden_states", "hidden_states_scale", "gemm1_weights",
        "gemm1_weights_scale", "gemm2_weights", "gemm2_weights_scale")}
    inputs["local_expert_offset"] = {"type": "scalar", "value": offset}
    inputs["routed_scaling_factor"] = {"type": "scalar", "value": 2.5}
    return inputs


def row(index, seq_len):
    offset = 32 * (index % 8)
    inputs = moe_inputs(offset)
    return {"definition": NAME, "solution": None, "evaluation": None,
            "workload": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ksearch/{NAME}/t{seq_len}-o{offset}")),
                         "axes": {"seq_len": seq_len}, "inputs": inputs}}


def main():
    PATH.write_text("".join(json.dumps(row(i, t)) + "\n" for i, t in enumerate(SEQ_LENS)))
    print(f"{PATH}: {len(SEQ_LENS)} workloads")


if __name__ == "__main__":
    main()
