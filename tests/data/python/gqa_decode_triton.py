# GQA paged decode in Triton: one program per (request, KV head) streams that head's pages with an
# online softmax in base 2; the eight query heads of the group are padded to sixteen rows for
# tl.dot. Correct on every workload, not tuned (long single requests use only four programs).
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _decode(q_ptr, k_ptr, v_ptr, indptr_ptr, indices_ptr, out_ptr, lse_ptr, scale2,
            QH: tl.constexpr, KVH: tl.constexpr, D: tl.constexpr, GROUP: tl.constexpr, ROWS: tl.constexpr,
            BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    rows = tl.arange(0, ROWS)
    d = tl.arange(0, D)
    row_ok = rows < GROUP
    heads = h * GROUP + rows
    q = tl.load(q_ptr + (b * QH + heads)[:, None] * D + d[None, :], mask=row_ok[:, None], other=0.0)
    start = tl.load(indptr_ptr + b)
    end = tl.load(indptr_ptr + b + 1)
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        n_ok = n < end
        page = tl.load(indices_ptr + n, mask=n_ok, other=0).to(tl.int64)
        kv_off = (page * KVH + h)[:, None] * D + d[None, :]
        k = tl.load(k_ptr + kv_off, mask=n_ok[:, None], other=0.0)
        v = tl.load(v_ptr + kv_off, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale2
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m = m_new
    empty = l == 0.0
    out = tl.where(empty[:, None], 0.0, acc / tl.where(empty, 1.0, l)[:, None])
    tl.store(out_ptr + (b * QH + heads)[:, None] * D + d[None, :], out.to(tl.bfloat16), mask=row_ok[:, None])
    lse = tl.where(empty, float("-inf"), m + tl.log2(tl.where(empty, 1.0, l)))
    tl.store(lse_ptr + b * QH + heads, lse, mask=row_ok)


def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, output, lse):
    batch, qh, d = q.shape
    kvh = k_cache.shape[2]
    if batch == 0:
        return
    _decode[(batch, kvh)](q, k_cache, v_cache, kv_indptr, kv_indices, output, lse, sm_scale * LOG2E,
                          QH=qh, KVH=kvh, D=d, GROUP=qh // kvh, ROWS=16, BLOCK_N=64, num_warps=4)
