#!/usr/bin/env python3
"""FlashMLA's dense bf16 decode (SM90), as compiled into vLLM's PyPI wheel, timed the lab's way.

ANCHORS.md's FlashMLA numbers come from one call on one day and cannot be re-taken here (FlashMLA has no
wheel of its own on PyPI). vLLM's wheel ships FlashMLA built against PyTorch's stable ABI
(`vllm/_flashmla_C.abi3.so`); `CUTELAB_WITH_FLASHMLA_VLLM=1 scripts/bootstrap` unpacks that one library
into .deps/, and this script loads it into the PyTorch at hand (no vLLM import, no pip install) and
times it beside the lab's kernels in the same call, so both run in the same power state
(docs/knowledge/anti-patterns/short-median-under-a-power-cap.md).

Method: `cutelab.testing.bench`, the lab's own (MEASURE.md, as `cutelab run`): one call per CUDA-graph
replay, L2 flushed before each sample, the lab's warm-up, stopping rule and statistics; the schedule is
made by the first call and reused. `--timing rotating` (or `both`) also takes the rotating figure, as
`cutelab run --timing rotating` does: K input sets (q and KV from seeds seed..seed+K-1, one length draw and
page table for all, each set with its own schedule made before capture), K calls in one graph, time / K,
no flush. Cases and anchors from a suite file (bench/suites/mla_decode.json);
varlen rows draw lengths from N(t, t/2) clipped to [s, 131072] with their own generator, so compare
TFLOP/s there (DESIGN.md's cost model: 2 * b * s_q * h_q * mean length * (576 + 512)). Needs the
package's build tree on the path (scripts/test builds it):

    PYTHONPATH=build/release/python python3 bench/baselines/flashmla_vllm.py [--cases h128,t4096] \
        [--min-samples 2000] [--timing flush|rotating|both] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_SO = ROOT / ".deps" / "flashmla-vllm-0.33.0" / "_flashmla_C.abi3.so"
PAGE, D_QK, D_V, MAX_LEN = 64, 576, 512, 131072


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--so", type=pathlib.Path, default=DEFAULT_SO, help="vLLM's _flashmla_C.abi3.so")
    p.add_argument("--suite", type=pathlib.Path, default=ROOT / "bench" / "suites" / "mla_decode.json")
    p.add_argument("--cases", default="", help="comma-separated substrings; a case runs if its label has all")
    p.add_argument("--min-samples", type=int, default=20)
    p.add_argument("--max-time", type=float, default=2.0, help="cap on the sampling loop, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timing", choices=("flush", "rotating", "both"), default="flush",
                   help="which figures (default: flush, the lab method)")
    p.add_argument("--no-check", action="store_true", help="skip the fp32 reference on two requests")
    p.add_argument("--json", type=pathlib.Path, help="also write the rows here")
    a = p.parse_args(argv)
    if a.min_samples < 1 or a.max_time < 0:
        p.error("--min-samples must be >= 1 and --max-time >= 0")
    if not a.so.is_file():
        p.error(f"{a.so} not found: run CUTELAB_WITH_FLASHMLA_VLLM=1 scripts/bootstrap (or pass --so)")
    return a


def make_case(torch, prob, seed, length_seed=None):
    """q and the KV cache from `seed`; the lengths and the page table from `length_seed` (default: seed),
    so that rotated sets share one length draw, as the lab's do."""
    b, s_q, h, t = prob["b"], prob.get("s", 1), prob["h"], prob.get("t", 0)
    if prob.get("hkv", 1) != 1 or prob.get("dtype", "bf16") != "bf16":
        raise ValueError("FlashMLA's dense MLA decode takes one bf16 KV head")
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(seed if length_seed is None else length_seed)
    if prob.get("lens"):
        lens = torch.tensor(prob["lens"], dtype=torch.int64)
    elif prob.get("varlen"):
        lens = torch.normal(float(t), t / 2.0, (b,), generator=g).round().clamp(s_q, MAX_LEN).to(torch.int64)
    else:
        lens = torch.full((b,), t, dtype=torch.int64)
    pages = (lens + PAGE - 1) // PAGE
    width = max(1, int(pages.max()))
    order = torch.randperm(int(pages.sum()), generator=g).to(torch.int32)
    table = torch.zeros(b, width, dtype=torch.int32)
    first = 0
    for r in range(b):  # each request's pages scattered over the pool
        table[r, : pages[r]] = order[first: first + int(pages[r])]
        first += int(pages[r])
    gd = torch.Generator(device=dev).manual_seed(seed)
    q = torch.randn(b, s_q, h, D_QK, generator=gd, device=dev, dtype=torch.bfloat16)
    kv = torch.randn(max(1, first), PAGE, 1, D_QK, generator=gd, device=dev, dtype=torch.bfloat16)
    return q, kv, table.to(dev), lens.to(torch.int32).to(dev), bool(prob.get("causal", False))


def reference_rel_l2(torch, q, kv, table, lens, causal, out, scale, requests=2):
    worst = 0.0
    s_q, h = q.shape[1], q.shape[2]
    for r in range(min(requests, q.shape[0])):
        L = int(lens[r])
        k = kv[table[r].long()].reshape(-1, D_QK)[:L].float()
        logits = (q[r].float().reshape(s_q * h, D_QK) @ k.T) * scale
        if causal:
            visible = L - s_q + torch.arange(s_q * h, device=q.device) // h + 1
            logits = logits.masked_fill(torch.arange(L, device=q.device)[None, :] >= visible[:, None], float("-inf"))
        ref = torch.softmax(logits, -1) @ k[:, :D_V]
        got = out[r].float().reshape(s_q * h, D_V)
        worst = max(worst, ((got - ref).norm() / ref.norm()).item())
    return worst


def anchor_us(case, device, timing):
    """The suite case's anchor of one method for this device (an object or a list of them), or None."""
    found = (case.get("anchors") or {}).get(device)
    for a in (found if isinstance(found, list) else [found] if found else []):
        if a.get("timing", "flush") == timing:
            return a["us"]
    return None


def main(argv):
    a = parse_args(argv)
    try:
        from cutelab import testing
    except ImportError as e:
        print(f"cutelab's Python package is not importable ({e}): run with PYTHONPATH=build/release/python "
              "after scripts/test has built it", file=sys.stderr)
        return 2
    import torch
    if not torch.cuda.is_available():
        print("skipped: no CUDA GPU", file=sys.stderr)
        return 3
    torch.ops.load_library(str(a.so))
    decode = torch.ops._flashmla_C.dense_decode_fwd
    suite = json.loads(a.suite.read_text())
    device = torch.cuda.get_device_name()
    wanted = [w for w in a.cases.split(",") if w]
    rows = []
    flush, rotating = a.timing in ("flush", "both"), a.timing in ("rotating", "both")
    print(f"FlashMLA (vLLM 0.33.0 wheel, {a.so.name}) on {device}, torch {torch.__version__}; "
          f"timing {a.timing}, >= {a.min_samples} samples, cap {a.max_time} s")
    print(f"{'case':44s} {'median us':>10s} {'TFLOP/s':>8s} {'anchor us':>10s} {'anchor/us':>9s} "
          f"{'rotating us':>17s} {'rot. anchor':>11s} {'anchor/us':>9s}  check")
    for case in suite["cases"]:
        label, prob = case["label"], case["problem"]
        if prob.get("timing", "flush") != "flush" or any(w not in label for w in wanted):
            continue
        scale = D_QK ** -0.5

        def make_set(seed):
            q, kv, table, lens, causal = make_case(torch, prob, seed, length_seed=a.seed)
            out = torch.empty(q.shape[0], q.shape[1], q.shape[2], D_V, device="cuda", dtype=torch.bfloat16)
            return [q, kv, table, lens, out, causal, [None, None]]  # the last: the schedule, once made

        def call(q, kv, table, lens, out, causal, meta):
            # Its out argument wants another shape when s_q > 1: the op allocates then.
            o, lse, meta[0], meta[1] = decode(q, kv, D_V, lens, table, scale, causal, meta[0], meta[1],
                                              out if q.shape[1] == 1 else None)
            return o

        first = make_set(a.seed)
        q, lens, causal = first[0], first[3], first[5]
        o = call(*first)  # the schedule, reused by every later call
        torch.cuda.synchronize()
        check = None if a.no_check else reference_rel_l2(torch, q, first[1], first[2], lens, causal, o, scale)
        mean_len = float(lens.double().mean())
        flops = 2.0 * q.shape[0] * q.shape[1] * q.shape[2] * mean_len * (D_QK + D_V)
        bench = dict(min_samples=a.min_samples, max_samples=max(2000, a.min_samples), max_seconds=a.max_time)
        row = {"label": label, "mean_len": mean_len, "check_rel_l2": check}
        if flush:
            t = testing.bench(lambda: call(*first), **bench)
            samples, n = t.samples_us, t.n
            row.update(median_us=t.median_us, tflops=flops / t.median_us / 1e6, n=n, stop=t.stop_reason,
                       first5_us=sum(samples[:5]) / min(5, n), last20_us=sum(samples[-20:]) / min(20, n),
                       anchor_us=anchor_us(case, device, "flush"), samples_us=samples, clocks=t.clocks)
        if rotating:
            seeds = iter(range(a.seed, a.seed + 64))

            def next_set():
                s = first if not rotating_sets else make_set(next(seeds))
                if s is not first:
                    call(*s)  # its own schedule, before capture
                rotating_sets.append(s)
                return s

            rotating_sets = []
            next(seeds)  # seed a.seed is `first`
            t = testing.bench(call, timing="rotating", get_inputs=next_set, **bench)
            row.update(rotating_median_us=t.median_us, rotating_sets=t.sets, rotating_n=t.n,
                       rotating_anchor_us=anchor_us(case, device, "rotating"), rotating_samples_us=t.samples_us,
                       rotating_clocks=t.clocks)
            del rotating_sets
        rows.append(row)
        ok = "-" if check is None else (f"{check:.1e}" if check < 1e-2 else f"FAIL {check:.1e}")

        def cells(us, anchor):
            return (f"{us:10.2f}" if us else f"{'-':>10s}",
                    f"{anchor if anchor else '-':>10}",
                    f"{anchor / us:9.3f}" if anchor and us else f"{'-':>9s}")

        m, fa, fr = cells(row.get("median_us"), row.get("anchor_us"))
        rm, ra, rr = cells(row.get("rotating_median_us"), row.get("rotating_anchor_us"))
        k = f" (K={row['rotating_sets']})" if "rotating_sets" in row else ""
        tf = f"{row['tflops']:8.1f}" if "tflops" in row else f"{'-':>8s}"
        print(f"{label:44s} {m} {tf} {fa} {fr} {rm + k:>17s} {ra:>11s} {rr}  {ok}", flush=True)
        del first, q, lens, o
        torch.cuda.empty_cache()
    if a.json:
        a.json.write_text(json.dumps({"kernel": "FlashMLA dense decode, vLLM 0.33.0 wheel", "device": device,
                                      "torch": torch.__version__, "argv": argv, "rows": rows}, indent=1))
    failed = [r["label"] for r in rows if r["check_rel_l2"] is not None and not r["check_rel_l2"] < 1e-2]
    if failed:
        print("check failed: " + ", ".join(failed), file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
