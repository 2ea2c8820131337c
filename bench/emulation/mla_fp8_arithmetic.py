#!/usr/bin/env python3
"""Host emulation of the arithmetic of FP8-tensor-core MLA decode kernels against fp64 on the
same dequantised cache: how far a correct kernel's out and lse can move, per request length, so
that a test's tolerances are derived before a kernel exists (MEASURE.md: never widened to pass).

  fp8_tensor     paged_sm90_fp8 v2/v3: q (576 columns, one scale per row) and P x 2^8 in e4m3,
                 the cache's codes read as they are (MlaArithmetic::e4m3_q_and_p).
  fp8_token      the design for DeepSeek V3.2's layout on FP8 tensor cores
                 (docs/kernels/mla-decode-fp8.md, "fp8_token on the FP8 tensor cores"): each page's
                 latent codes requantised to the piece's reference scale M (the largest group scale
                 seen so far), code' = e4m3(f16(code x f16(s / M))); q's latent columns in e4m3 (one
                 scale per row), its RoPE columns bf16 divided by (q scale x M); P x 2^8 in e4m3.
                 `--rope-on k`: as paged_sm90_fp8 v4 does it, Q's RoPE divided by q scale and the
                 page's RoPE by M, each rounded to bf16.

Everything else is exact (fp64): the kernels accumulate in fp32, which is far below these errors.
The softmax follows v3's (reference max moved only beyond 0.8 in log2 units, row sums of the
unrounded exponentials). Data as the tests make it: q and KV ~ N(0, 1) in bf16, softmax scale
1/sqrt(576); `--outlier X` multiplies one token per request by X (a large-scale token makes M
large for all the others).

Run with the project's Python deps (numpy from scripts/bootstrap):
  PYTHONPATH=.deps/pydeps-cp311 python3 bench/emulation/mla_fp8_arithmetic.py [--outlier 30]
"""
import argparse
import math

import numpy as np

E4M3_MAX = 448.0


def round_float(x, mantissa_bits, min_normal_exp, max_value=None):
    """Round to nearest even on a binary float grid with `mantissa_bits` stored bits."""
    a = np.abs(x)
    e = np.floor(np.log2(np.maximum(a, 2.0**-126)))
    e = np.maximum(e, min_normal_exp)  # subnormals: the step of the smallest normal binade
    step = np.exp2(e - mantissa_bits)
    r = np.round(a / step) * step  # numpy rounds half to even
    if max_value is not None:
        r = np.minimum(r, max_value)  # satfinite
    return np.sign(x) * r


def e4m3(x):
    return round_float(x, 3, -6, E4M3_MAX)


def bf16(x):
    return round_float(x, 7, -126)


def f16(x):
    return round_float(x, 10, -14, 65504.0)


def reference(q, k_deq, scale):
    s = (q @ k_deq.T) * scale
    m = s.max(axis=1, keepdims=True)
    w = np.exp(s - m)
    lse = (m[:, 0] + np.log(w.sum(axis=1)))
    out = (w @ k_deq[:, :512]) / w.sum(axis=1, keepdims=True)
    return out, lse


def softmax_pages(logits_log2, v_pages, page_factor=None, slack=0.8):
    """v3's page loop: logits (rows, L) in log2 units per page, V per page; P x 2^8 in e4m3.
    page_factor(p): the factor O takes before page p's product (M moving), or None."""
    rows = logits_log2.shape[0]
    run = np.full(rows, -np.inf)
    row_sum = np.zeros(rows)
    o = np.zeros((rows, 512))
    start = 0
    for p, v in enumerate(v_pages):
        n = v.shape[0]
        x = logits_log2[:, start:start + n]
        start += n
        if page_factor is not None:
            o *= page_factor(p)
        page_max = x.max(axis=1)
        move = page_max > run + slack
        scale = np.where(move, np.exp2(np.where(move, run - page_max, 0.0)), 1.0)
        run = np.where(move, page_max, run)
        row_sum *= scale
        o *= scale[:, None]
        e = np.exp2(x - run[:, None] + 8.0)
        row_sum += e.sum(axis=1)
        o += e4m3(e) @ v
    return o, row_sum, run


def emulate_fp8_tensor(q, kv, scale, page=64):
    kv_scale = np.abs(kv).max() / E4M3_MAX
    codes = e4m3(kv / kv_scale)
    k_deq = codes * kv_scale
    q_scale = np.abs(q).max(axis=1) / E4M3_MAX
    q8 = e4m3(q / q_scale[:, None])
    logits = (q8 @ codes.T) * (q_scale * kv_scale * scale / math.log(2))[:, None]
    pages = [codes[i:i + page, :512] for i in range(0, kv.shape[0], page)]
    o, row_sum, run = softmax_pages(logits, pages)
    out = o * kv_scale / row_sum[:, None]
    lse = (run + np.log2(row_sum / 256.0)) * math.log(2)
    return (out, lse), reference(q, k_deq, scale), reference(q, kv, scale)


def emulate_fp8_token(q, kv, scale, page=64, rope_on="q"):
    L = kv.shape[0]
    groups = kv[:, :512].reshape(L, 4, 128)
    s = np.abs(groups).max(axis=2) / E4M3_MAX  # (L, 4), as quantize_kv writes them
    s = np.where(s > 0, s, 1.0).astype(np.float32).astype(np.float64)
    codes = e4m3(groups / s[:, :, None]).reshape(L, 512)
    rope = kv[:, 512:]  # bf16 as given
    k_deq = np.concatenate([(codes.reshape(L, 4, 128) * s[:, :, None]).reshape(L, 512), rope], axis=1)

    q_scale = np.abs(q[:, :512]).max(axis=1) / E4M3_MAX
    q_scale = np.where(q_scale > 0, q_scale, 1.0)
    q8 = e4m3(q[:, :512] / q_scale[:, None])
    logits = np.empty((q.shape[0], L))
    v_pages, m_of_page = [], []
    big_m = 0.0
    for start in range(0, L, page):
        stop = min(start + page, L)
        m = s[start:stop].max()
        big_m = max(big_m, m)
        ratio = f16(s[start:stop] / big_m)  # one per (token, group), as the f16 HMUL2 takes it
        req = e4m3(f16(codes[start:stop].reshape(-1, 4, 128) * ratio[:, :, None])).reshape(-1, 512)
        if rope_on == "q":  # the design note: Q's RoPE divided by q scale x M
            acc = q8 @ req.T + bf16(q[:, 512:] / (q_scale * big_m)[:, None]) @ rope[start:stop].T
        else:  # paged_sm90_fp8 v4: Q's RoPE by q scale, the page's RoPE by M, each rounded to bf16
            acc = q8 @ req.T + bf16(q[:, 512:] / q_scale[:, None]) @ bf16(rope[start:stop] / big_m).T
        logits[:, start:stop] = acc * (q_scale * big_m * scale / math.log(2))[:, None]
        v_pages.append(req)
        m_of_page.append(big_m)
    factor = lambda p: 1.0 if p == 0 else m_of_page[p - 1] / m_of_page[p]
    o, row_sum, run = softmax_pages(logits, v_pages, factor)
    out = o * m_of_page[-1] / row_sum[:, None]
    lse = (run + np.log2(row_sum / 256.0)) * math.log(2)
    return (out, lse), reference(q, k_deq, scale), reference(q, kv, scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outlier", type=float, default=1.0, help="factor on one token per request")
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rope-on", choices=("q", "k"), default="q",
                    help="fp8_token: which side of the RoPE product takes 1 / M (k: paged_sm90_fp8 v4)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    scale = 1.0 / math.sqrt(576.0)
    print(f"rows {args.rows} x {args.requests} requests per length, outlier x{args.outlier}")
    print("kernel error: against fp64 on the dequantised cache; cache error: fp64 on the dequantised")
    print("cache against fp64 on the original bf16 one (what the format itself costs, for scale)")
    print(f"{'format':10s} {'keys':>5s} {'out relL2':>9s} {'out atol@rtol2e-2':>17s} "
          f"{'lse max|err|':>12s} {'lse relL2':>9s} {'cache: out relL2':>16s} {'lse max|err|':>12s}")
    token = lambda q, kv, scale: emulate_fp8_token(q, kv, scale, rope_on=args.rope_on)
    for fmt, emulate in (("fp8_tensor", emulate_fp8_tensor), ("fp8_token", token)):
        for L in (1, 2, 3, 8, 64, 65, 300, 1000, 4096):
            err2 = ref2 = 0.0
            atol = lse_max = 0.0
            lse_err2 = lse_ref2 = 0.0
            fmt_err2 = fmt_lse = 0.0
            for _ in range(args.requests if L <= 1000 else max(2, args.requests // 6)):
                q = bf16(rng.standard_normal((args.rows, 576)))
                kv = bf16(rng.standard_normal((L, 576)))
                if args.outlier != 1.0:
                    kv[rng.integers(L)] *= args.outlier
                (out, lse), (out_r, lse_r), (out_o, lse_o) = emulate(q, kv, scale)
                fmt_err2 += ((out_r - out_o)**2).sum()
                fmt_lse = max(fmt_lse, np.abs(lse_r - lse_o).max())
                d = out - out_r
                err2 += (d**2).sum()
                ref2 += (out_r**2).sum()
                atol = max(atol, (np.abs(d) - 2e-2 * np.abs(out_r)).max())
                lse_max = max(lse_max, np.abs(lse - lse_r).max())
                lse_err2 += ((lse - lse_r)**2).sum()
                lse_ref2 += (lse_r**2).sum()
            print(f"{fmt:10s} {L:5d} {math.sqrt(err2 / ref2):9.2e} {atol:17.3f} {lse_max:12.3f} "
                  f"{math.sqrt(lse_err2 / lse_ref2):9.2e} {math.sqrt(fmt_err2 / ref2):16.2e} {fmt_lse:12.3f}")


if __name__ == "__main__":
    main()
