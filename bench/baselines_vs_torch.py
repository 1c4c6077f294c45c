#!/usr/bin/env python3
"""Side by side on one GPU: each task's baseline.cu through `ksearch eval`, and the PyTorch
implementation a user would write for the same computation on the same shapes.

For every workload of every task it prints the baseline's median latency (ksearch's timer: L2
flushed before every sample, median), the PyTorch median under triton's do_bench (also flushing
L2 before every call, median), their ratio, the baseline's fraction of the cost model's roofline
floor, and how far PyTorch's answer is from an fp32 reference on the same inputs (so a fast but
wrong PyTorch path cannot pass for a fair comparison).

The PyTorch side (documented in docs/tasks.md):
  gqa decode   padded batch: gather K/V, fp32 einsum for the logits (bf16 logits miss the
               tolerance), fp32 softmax, bf16 einsum (output + lse)
  mla decode   padded batch: gather ckv/kpe, the same (output + lse)
  mla prefill  per request: torch.nn.functional.scaled_dot_product_attention with the
               bottom-right causal mask as a boolean mask (output only; SDPA gives no lse)
  trimul       GPU MODE's reference module in fp32 with TF32 off, as its reference.py runs it:
               layer_norm, five linear layers, the einsum contraction, layer_norm, gate, linear
  moe          FlashInfer-Bench's reference made a little kinder: the routing in torch ops
               (sigmoid, group top-2 sums, top-4 groups, top-8 experts), then per local expert
               that got a token: dequantise its weights, gather its tokens, fp32 matmuls, SwiGLU,
               index_add of the weighted outputs
Index layouts (padding, masks) are made once per workload outside the timed call, as a
serving engine's plan step would.

Usage: baselines_vs_torch.py --ksearch BIN [--tasks T1,T2] [--out FILE.json] [--max-seconds S]
           [--moe-routing random|balanced]
For the MoE it also times baseline.cu on PyTorch's very inputs (the routing, and so the work,
differs between draws) and prints their local (token, expert) pairs, TFLOP/s and fraction of
the fp8 peak.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

import task_rule

LN2 = math.log(2.0)


def load_workloads(task_dir):
    rows = []
    with open(os.path.join(task_dir, "workloads.jsonl")) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line)["workload"])
    return rows


def lengths(w, name):
    return w["inputs"][name]["lengths"]


def scalar(w, name):
    return w["inputs"][name]["value"]


def indptr_of(lens):
    out = [0]
    for n in lens:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32, device="cuda")


def rand(*shape):
    return torch.randn(*shape, device="cuda").to(torch.bfloat16)


def padded_plan(indptr, indices):
    """[B, L] page numbers (0 where padded) and the [B, L] mask of real tokens."""
    lens = (indptr[1:] - indptr[:-1]).long()
    longest = max(int(lens.max()), 1)
    pos = torch.arange(longest, device="cuda")
    mask = pos[None, :] < lens[:, None]
    flat = (indptr[:-1].long()[:, None] + pos[None, :]).clamp(max=max(indices.numel() - 1, 0))
    pages = torch.where(mask, indices.long()[flat] if indices.numel() else torch.zeros_like(flat), 0)
    return pages, mask


def softmax_attend(logits, mask, values):
    """fp32 masked softmax over the last axis of logits [B, H, L]; returns (out bf16, lse base 2)."""
    logits = logits.masked_fill(~mask[:, None, :], float("-inf"))
    lse = torch.logsumexp(logits, -1)
    p = torch.exp(logits - lse[..., None]).nan_to_num(0.0)  # empty requests: all -inf
    out = torch.einsum("bhl,bld->bhd", p.to(values.dtype), values)
    return out, lse / LN2


def per_request_exact(batch, indptr, indices, request):
    """fp32 decode, one request at a time, as FlashInfer-Bench's reference loops: request(b, pages)
    gives the [H, T] logits and a function applying softmax weights to the values."""
    outs, lses = [], []
    for b in range(batch):
        s, e = int(indptr[b]), int(indptr[b + 1])
        logits, apply = request(b, indices[s:e].long())
        lse = torch.logsumexp(logits, -1)
        outs.append(apply(torch.exp(logits - lse[:, None]).nan_to_num(0.0)))
        lses.append(lse / LN2)
    return torch.stack(outs), torch.stack(lses)


# ------------------------------------------------------------------ GQA decode

def decode_indices(w, pages):
    """A decode workload's kv_indptr, distinct random pages of the pool, sm_scale and padded plan
    (drawn after the value tensors, as before, so the inputs do not change)."""
    indptr = indptr_of(lengths(w, "kv_indptr"))
    indices = torch.randperm(pages, device="cuda")[: w["axes"]["num_kv_indices"]].int()
    return indptr, indices, scalar(w, "sm_scale"), padded_plan(indptr, indices)


def gqa_setup(w, defn):
    ax = w["axes"]
    B, pages = ax["batch_size"], ax["num_pages"]
    H, KV, D = 32, 4, 128
    q = rand(B, H, D)
    k_cache, v_cache = rand(pages, 1, KV, D), rand(pages, 1, KV, D)
    indptr, indices, sm_scale, plan = decode_indices(w, pages)

    def run():
        page, mask = plan
        k = k_cache[:, 0][page]  # [B, L, KV, D]
        v = v_cache[:, 0][page]
        qg = q.view(B, KV, H // KV, D)
        logits = torch.einsum("bkgd,blkd->bkgl", qg.float(), k.float()).reshape(B, H, -1) * sm_scale
        logits = logits.masked_fill(~mask[:, None, :], float("-inf"))
        lse = torch.logsumexp(logits, -1)
        p = torch.exp(logits - lse[..., None]).nan_to_num(0.0).to(torch.bfloat16)
        out = torch.einsum("bkgl,blkd->bkgd", p.view(B, KV, H // KV, -1), v).reshape(B, H, D)
        return out, lse / LN2

    def request(b, pages):
        k = k_cache[pages, 0].float().repeat_interleave(H // KV, 1)  # [T, H, D]
        v = v_cache[pages, 0].float().repeat_interleave(H // KV, 1)
        return torch.einsum("hd,thd->ht", q[b].float(), k) * sm_scale, lambda p: torch.einsum("ht,thd->hd", p, v)

    def exact():
        return per_request_exact(B, indptr, indices, request)

    # The call the independent measurement timed: scaled_dot_product_attention on K/V
    # already contiguous (gathered before timing), padded to the longest request and masked
    # (no mask at batch 1, which lets PyTorch pick its flash kernel). Output only, no lse.
    page, mask = plan
    k_pad = k_cache[:, 0][page].permute(0, 2, 1, 3).contiguous()  # [B, KV, L, D]
    v_pad = v_cache[:, 0][page].permute(0, 2, 1, 3).contiguous()
    attn_mask = None if B == 1 else mask[:, None, None, :]
    qs = q.view(B, H, 1, D)

    def sdpa_contiguous():
        return torch.nn.functional.scaled_dot_product_attention(qs, k_pad, v_pad, attn_mask=attn_mask,
                                                                scale=sm_scale, enable_gqa=True)

    return run, exact, {"SDPA contiguous": sdpa_contiguous}


# ------------------------------------------------------------------ MLA decode

def mla_decode_setup(w, defn):
    ax = w["axes"]
    B, pages, H = ax["batch_size"], ax["num_pages"], 16
    q_nope, q_pe = rand(B, H, 512), rand(B, H, 64)
    ckv, kpe = rand(pages, 1, 512), rand(pages, 1, 64)
    indptr, indices, sm_scale, plan = decode_indices(w, pages)

    def run():
        page, mask = plan
        kc, kp = ckv[:, 0][page], kpe[:, 0][page]  # [B, L, 512], [B, L, 64]
        logits = torch.einsum("bhd,bld->bhl", q_nope.float(), kc.float()) + torch.einsum("bhd,bld->bhl", q_pe.float(), kp.float())
        return softmax_attend(logits * sm_scale, mask, kc)

    def request(b, pages):
        kc, kp = ckv[pages, 0].float(), kpe[pages, 0].float()
        return (q_nope[b].float() @ kc.T + q_pe[b].float() @ kp.T) * sm_scale, lambda p: p @ kc

    def exact():
        return per_request_exact(B, indptr, indices, request)

    return run, exact


# ------------------------------------------------------------------ MLA prefill

def mla_prefill_setup(w, defn):
    ax = w["axes"]
    T, pages, H = ax["total_q"], ax["num_pages"], 16
    q_nope, q_pe = rand(T, H, 512), rand(T, H, 64)
    ckv, kpe = rand(pages, 1, 512), rand(pages, 1, 64)
    q_lens, kv_lens = lengths(w, "qo_indptr"), lengths(w, "kv_indptr")
    qo, kvp = indptr_of(q_lens).tolist(), indptr_of(kv_lens).tolist()
    indices = torch.randperm(pages, device="cuda")[: ax["num_kv_indices"]].long()
    sm_scale = scalar(w, "sm_scale")
    # Plan: per request its page list and its bottom-right causal mask.
    plan = []
    for b in range(len(q_lens)):
        ql, kl = q_lens[b], kv_lens[b]
        rows = torch.arange(ql, device="cuda")[:, None] + (kl - ql)
        plan.append((qo[b], qo[b + 1], indices[kvp[b]:kvp[b + 1]], torch.arange(kl, device="cuda")[None, :] <= rows))

    def run():
        out = torch.empty(T, H, 512, dtype=torch.bfloat16, device="cuda")
        for qs, qe, idx, mask in plan:
            kc, kp = ckv[idx, 0], kpe[idx, 0]
            query = torch.cat([q_nope[qs:qe], q_pe[qs:qe]], -1).transpose(0, 1)  # [H, q, 576]
            key = torch.cat([kc, kp], -1)[None].expand(H, -1, -1)
            value = kc[None].expand(H, -1, -1)
            out[qs:qe] = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=sm_scale).transpose(0, 1)
        return out, None

    def exact():
        out = torch.empty(T, H, 512, device="cuda")
        lse = torch.empty(T, H, device="cuda")
        for qs, qe, idx, mask in plan:
            kc, kp = ckv[idx, 0].float(), kpe[idx, 0].float()
            for h in range(H):
                logits = (q_nope[qs:qe, h].float() @ kc.T + q_pe[qs:qe, h].float() @ kp.T) * sm_scale
                logits = logits.masked_fill(~mask, float("-inf"))
                lse[qs:qe, h] = torch.logsumexp(logits, -1) / LN2
                out[qs:qe, h] = torch.softmax(logits, -1) @ kc
        return out, lse

    return run, exact


# ------------------------------------------------------------------ TriMul

def trimul_setup(w, defn):
    ax = w["axes"]
    B, N, C, H = ax["batch_size"], ax["seq_len"], ax["dim"], 128
    spec = w["inputs"]
    if spec["input"].get("distribution") == "cauchy":
        x = spec["input"].get("scale", 1.0) * torch.tan(math.pi * (torch.rand(B, N, N, C, device="cuda") - 0.5))
    else:
        x = torch.randn(B, N, N, C, device="cuda")
    mask = torch.ones(B, N, N, device="cuda") if spec["mask"]["type"] == "constant" \
        else torch.randint(0, 2, (B, N, N), device="cuda").float()
    nw, nb = torch.randn(C, device="cuda"), torch.randn(C, device="cuda")
    lp, rp, lg, rg, og = (torch.randn(H, C, device="cuda") / math.sqrt(H) for _ in range(5))
    onw, onb = torch.randn(H, device="cuda"), torch.randn(H, device="cuda")
    to_out = torch.randn(C, H, device="cuda") / math.sqrt(H)

    def module(dtype):
        xs = x.to(dtype)
        xn = F.layer_norm(xs, (C,), nw.to(dtype), nb.to(dtype))
        m = mask.to(dtype)[..., None]
        left = F.linear(xn, lp.to(dtype)) * m * torch.sigmoid(F.linear(xn, lg.to(dtype)))
        right = F.linear(xn, rp.to(dtype)) * m * torch.sigmoid(F.linear(xn, rg.to(dtype)))
        gate = torch.sigmoid(F.linear(xn, og.to(dtype)))
        out = torch.einsum("... i k d, ... j k d -> ... i j d", left, right)
        out = F.layer_norm(out, (H,), onw.to(dtype), onb.to(dtype)) * gate
        return F.linear(out, to_out.to(dtype))

    def run():
        torch.backends.cuda.matmul.allow_tf32 = False  # GPU MODE's reference runs under DisableCuDNNTF32
        torch.backends.cudnn.allow_tf32 = False
        return module(torch.float32), None

    def exact():
        return module(torch.float64).float(), None

    return run, exact


# ------------------------------------------------------------------ FP8 MoE

# H100 / H200 SXM, dense e4m3 tensor cores (twice the 989 TFLOP/s of bf16); both cards have it.
FP8_DENSE_PEAK_TFLOPS = 1979.0
MOE_ROUTING = "random"  # --moe-routing


def moe_setup(w, defn):
    T, E, L, D, I = w["axes"]["seq_len"], 256, 32, 7168, 2048
    fp8 = torch.float8_e4m3fn
    logits = torch.randn(T, E, device="cuda")
    # "random" (the default, like the task's own inputs): a bias of N(0, 1) outweighs the sigmoid
    # scores, so nearly every token picks the same experts and few pairs are local. "balanced":
    # no bias, the scores alone pick, and each expert gets about T x 8 / 256 tokens, the load a
    # deployment's trained bias aims at (EP8: about T local pairs).
    bias = (torch.randn(E, device="cuda") if MOE_ROUTING == "random" else torch.zeros(E, device="cuda")).to(torch.bfloat16)
    hs, hs_scale = torch.randn(T, D, device="cuda").to(fp8), torch.randn(D // 128, T, device="cuda")
    w1, w1_scale = torch.randn(L, 2 * I, D, device="cuda").to(fp8), torch.randn(L, 2 * I // 128, D // 128, device="cuda")
    w2, w2_scale = torch.randn(L, D, I, device="cuda").to(fp8), torch.randn(L, D // 128, I // 128, device="cuda")
    offset, rsf = int(scalar(w, "local_expert_offset")), scalar(w, "routed_scaling_factor")
    inputs = {"routing_logits": logits, "routing_bias": bias, "hidden_states": hs, "hidden_states_scale": hs_scale,
              "gemm1_weights": w1, "gemm1_weights_scale": w1_scale, "gemm2_weights": w2, "gemm2_weights_scale": w2_scale}
    scalars = {"local_expert_offset": offset, "routed_scaling_factor": rsf}

    def blocks(scale):  # a [.., r, c] block scale over 128 x 128 blocks
        return scale.repeat_interleave(128, -2).repeat_interleave(128, -1)

    def route(dtype):
        """DeepSeek-V3's routing in dtype: the sigmoid scores and each token's 8 experts."""
        s = torch.sigmoid(logits.to(dtype))
        sb = s + bias.to(dtype)
        group = sb.view(T, 8, 32).topk(2, -1).values.sum(-1)
        kept = torch.zeros(T, 8, dtype=torch.bool, device="cuda").scatter(1, group.topk(4, -1).indices, True)
        return s, sb.masked_fill(~kept.repeat_interleave(32, 1), float("-inf")).topk(8, -1).indices

    def module(dtype):
        a = hs.to(dtype) * hs_scale.T.to(dtype).repeat_interleave(128, 1)
        s, idx = route(dtype)
        weights = s.gather(1, idx)
        weights = weights / (weights.sum(-1, keepdim=True) + 1e-20) * rsf
        out = torch.zeros(T, D, dtype=dtype, device="cuda")
        for le in range(L):
            chosen = idx == offset + le
            tokens = chosen.any(-1).nonzero().squeeze(1)
            if tokens.numel() == 0:
                continue
            g = a[tokens] @ (w1[le].to(dtype) * blocks(w1_scale[le]).to(dtype)).T
            c = F.silu(g[:, I:]) * g[:, :I]
            o = c @ (w2[le].to(dtype) * blocks(w2_scale[le]).to(dtype)).T
            out.index_add_(0, tokens, o * (weights * chosen)[tokens].sum(-1, keepdim=True))
        return out

    def run():
        torch.backends.cuda.matmul.allow_tf32 = False
        return module(torch.float32).to(torch.bfloat16), None

    def exact():
        return module(torch.float64).float(), None

    # What these inputs cost: each (token, local expert) pair runs both GEMMs, 2 * 3 * D * I FLOPs.
    # The routing in fp32, as the task's precision rule has it.
    _, idx = route(torch.float32)
    local = ((idx >= offset) & (idx < offset + L)).sum().item()
    run.work = {"local_pairs": local, "flops": 2.0 * 3 * D * I * local, "peak_tflops": FP8_DENSE_PEAK_TFLOPS,
                "peak": "fp8"}

    # Routing decides the work (the random bias sends most tokens to a few experts), so the
    # baseline is also timed on these very inputs, through the kernel lab's loader.
    return run, exact, same_inputs_timer(defn, w, inputs, scalars, {"output": torch.empty(T, D, dtype=torch.bfloat16,
                                                                                             device="cuda")})


def same_inputs_timer(defn, w, inputs, scalars, outputs):
    """{"baseline.cu on these inputs": call} when bench/kernel_lab.sh built the baseline as
    build/lab/TASK/base.so (else {}): the call runs it on the PyTorch side's tensors."""
    lab = os.path.join("build", "lab", defn["name"])
    if not os.path.exists(os.path.join(lab, "base.so")):
        return {}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel_lab
    header = open(os.path.join(lab, "include", "ks_task.h")).read()
    kernel = kernel_lab.Kernel(os.path.join(lab, "base.so"), kernel_lab.args_struct(header))
    axes = {k: v["value"] for k, v in defn["axes"].items() if v["type"] == "const"}
    axes.update(w["axes"])
    workspace = torch.empty(int(kernel_lab.workspace_bytes(defn, axes)), dtype=torch.uint8, device="cuda")
    return {"baseline.cu on these inputs": kernel.bind(axes, inputs, scalars, outputs, workspace, workspace.numel())}


SETUPS = {"gqa_paged_decode_h32_kv4_d128_ps1": gqa_setup,
          "mla_paged_decode_h16_ckv512_kpe64_ps1": mla_decode_setup,
          "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1": mla_prefill_setup,
          "trimul": trimul_setup,
          "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048": moe_setup}


def check_error(got, exact, rule):
    """PyTorch's answer against exact math under the task's own rule, as the evaluator applies it
    (bench/task_rule.py) to each output: the output, and the lse where the task has one."""
    out, lse = got
    ref_out, ref_lse = exact
    verdict = task_rule.judge(out, ref_out, rule)
    if lse is not None:
        lse_verdict = task_rule.judge(lse, ref_lse, rule)
        verdict["within_tolerance"] = verdict["within_tolerance"] and lse_verdict["within_tolerance"]
        verdict["max_abs_error"] = max(verdict["max_abs_error"], lse_verdict["max_abs_error"])
    return verdict


def ksearch_eval(ksearch, task, max_seconds, ids):
    cmd = [ksearch, "eval", "--task", task, "--backend", "cuda", "--json", "--max-seconds", str(max_seconds)]
    if ids:
        cmd += ["--workloads", ",".join(ids)]
    cmd.append(os.path.join("tasks", task, "baseline.cu"))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    start = r.stdout.find("{")
    if r.returncode != 0 or start < 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout[start:])


def flops_of(w):
    """Multiply-adds of the attention, counted as 2 FLOPs (the cost models' count)."""
    ax = w["axes"]
    if list(ax) == ["seq_len"]:  # moe: what a token's 8 experts cost, an eighth of them local on average
        return 2.0 * ax["seq_len"] * (2 * 2048 * 7168 + 7168 * 2048)
    if "seq_len" in ax:  # trimul, its cost model's count
        B, N, C = ax["batch_size"], ax["seq_len"], ax["dim"]
        return 2.0 * B * N * N * 6 * C * 128 + 2.0 * B * N ** 3 * 128
    if "total_q" in ax:
        pairs = sum(q * (kv - q) + q * (q + 1) // 2
                    for q, kv in zip(lengths(w, "qo_indptr"), lengths(w, "kv_indptr")))
        return 2.0 * 16 * (512 + 64 + 512) * pairs
    if "q_nope" in w["inputs"]:
        return 2.0 * 16 * (512 + 64 + 512) * ax["num_kv_indices"]
    return 4.0 * 32 * 128 * ax["num_kv_indices"]


def work_of(run, us):
    """What a timing on the PyTorch side's very inputs achieved, when the setup counted their work."""
    work = getattr(run, "work", None)
    if not work:
        return ""
    tflops = work["flops"] / us / 1e6
    return (f"; {work['local_pairs']} local pairs, {tflops:.0f} TFLOP/s, "
            f"{tflops / work['peak_tflops']:.1%} of the {work['peak']} peak")


def describe(w):
    ax = w["axes"]
    if list(ax) == ["seq_len"]:
        return f"T{ax['seq_len']} offset {int(scalar(w, 'local_expert_offset'))}"
    if "seq_len" in ax:
        return f"bs{ax['batch_size']} n{ax['seq_len']} c{ax['dim']}"
    if "total_q" in ax:
        return f"bs{len(w['inputs']['qo_indptr']['lengths'])} q{ax['total_q']} kv{ax['num_kv_indices']}"
    return f"bs{ax['batch_size']} kv{ax['num_kv_indices']}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ksearch", required=True)
    ap.add_argument("--tasks", default=",".join(SETUPS))
    ap.add_argument("--out", default="")
    ap.add_argument("--max-seconds", type=float, default=0.3)
    ap.add_argument("--max-flops", type=float, default=0,
                    help="only workloads of at most this many FLOPs (0: all)")
    ap.add_argument("--workloads", default="", help="only these workloads (uuid prefixes, comma-separated)")
    ap.add_argument("--exact-limit", type=float, default=2e11,
                    help="skip the fp32 accuracy check of PyTorch above this many FLOPs")
    ap.add_argument("--moe-routing", choices=["random", "balanced"], default="random",
                    help="the MoE's routing bias: N(0, 1) (few local pairs) or none (about T local pairs)")
    args = ap.parse_args()
    global MOE_ROUTING
    MOE_ROUTING = args.moe_routing
    torch.manual_seed(0)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "tasks": {}}
    for task in args.tasks.split(","):
        print(f"\n{task}: ksearch eval of baseline.cu ...", flush=True)
        chosen = [w for w in load_workloads(os.path.join("tasks", task))
                  if (not args.max_flops or flops_of(w) <= args.max_flops)
                  and (not args.workloads or any(w["uuid"].startswith(p) for p in args.workloads.split(",")))]
        ev = ksearch_eval(args.ksearch, task, args.max_seconds, [w["uuid"] for w in chosen])
        with open(os.path.join(os.path.dirname(args.out) or ".", f"eval_{task}.json"), "w") as f:
            json.dump(ev, f, indent=1)
        by_id = {x["id"]: x for x in ev["workloads"]}
        rows = []
        print(f"\n### {task} (baseline.cu: {ev['status']}, J = {ev.get('score', 0):.1f})\n")
        definition = json.load(open(os.path.join("tasks", task, "definition.json")))
        rule = task_rule.rule_of(definition)
        print(f"| workload | shape | baseline us | PyTorch us | PyTorch / baseline | roofline fraction | baseline TFLOP/s | "
              f"PyTorch max abs err | PyTorch matched | PyTorch meets the task's rule (rtol {rule[1]:g}, {rule[2]:.0%}) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for w in chosen:
            run, exact, *more = SETUPS[task](w, definition)
            extras = more[0] if more else {}
            mine = by_id.get(w["uuid"], {})
            flops = flops_of(w)
            got = run()
            ref = exact() if flops <= args.exact_limit else None
            acc = check_error(got, ref, rule) if ref is not None else None
            del ref
            torch_us = do_bench(run, warmup=5, rep=200, return_mode="median") * 1000.0
            base_us = mine.get("latency_us", float("nan"))
            extra_us = {name: do_bench(fn, warmup=5, rep=200, return_mode="median") * 1000.0 for name, fn in extras.items()}
            row = {"workload": w["uuid"], "shape": describe(w), "baseline_us": base_us, "torch_us": torch_us,
                   "extra_us": extra_us,
                   "ratio": torch_us / base_us if base_us else float("nan"),
                   "roofline_fraction": mine.get("roofline_fraction"), "torch_accuracy": acc}
            rows.append(row)
            err = f"{acc['max_abs_error']:.3g} | {acc['matched_ratio']:.4f}" if acc else "not checked | -"
            within = ("yes" if acc["within_tolerance"] else "NO") if acc else "-"
            print(f"| {w['uuid'][:8]} | {row['shape']} | {base_us:.2f} | {torch_us:.2f} | {row['ratio']:.2f} | "
                  f"{(row['roofline_fraction'] or 0):.3f} | {flops / base_us / 1e6:.0f} | {err} | {within} |"
                  + "".join(f" {k}: {v:.2f} us (" + (f"PyTorch / it: {torch_us / v:.2f}" if k.startswith("baseline")
                                                   else f"{v / base_us:.2f}x") + work_of(run, v) + ") |"
                          for k, v in extra_us.items()), flush=True)
            if hasattr(run, "work"):
                row["work"] = dict(run.work, extra_tflops={k: run.work["flops"] / v / 1e6 for k, v in extra_us.items()})
            del run, exact, got, extras
            torch.cuda.empty_cache()
        ratios = [r["ratio"] for r in rows if r["ratio"] == r["ratio"]]
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
        print(f"\ngeometric mean of PyTorch / baseline: {gm:.2f}")
        scored = [r for r in rows if by_id.get(r["workload"], {}).get("scored", True)]
        if len(scored) < len(rows):  # the task scores a subset (scored_workloads): its geometric means
            def geo(key):
                return math.exp(sum(math.log(r[key]) for r in scored) / len(scored))
            print(f"over the {len(scored)} scored workloads: baseline {geo('baseline_us'):.1f} us, "
                  f"PyTorch {geo('torch_us'):.1f} us (geometric means)")
        report["tasks"][task] = {"status": ev["status"], "score": ev.get("score"), "rows": rows, "geomean_ratio": gm}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
