#!/usr/bin/env python3
"""Energy a call: the lab's MLA decode (Python API) beside FlashMLA (vLLM's build), rotating figure.

For each case both kernels run on the same K input sets (q and KV from seeds seed..seed+K-1, one length draw),
interleaved kernel by kernel over --rounds rounds, each timed by `cutelab.testing.bench(timing="rotating")`
with >= --min-samples samples (the board's power cap engaged), which reports the board's energy a call over its
sampling loop (the harness's NVML counter; nothing over a loop shorter than the counter resolves, 1 s). Prints
µs a call, joules a call and the loop's mean power. `--kernels`: the lab's kernels to run (default: the one
`mla.plan` picks, the family default without a tuning cache).

    PYTHONPATH=build/release/python python3 bench/tools/energy_per_call.py \
        --so .deps/flashmla-vllm-0.33.0/_flashmla_C.abi3.so [--cases 128:16:4096,128:128:4096] [--rounds 2] \
        [--kernels cute/mla_decode/paged_sm90/v8,cute/mla_decode/paged_sm90/v3] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "baselines"))
D_QK, D_V = 576, 512


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--so", type=pathlib.Path, required=True, help="vLLM's _flashmla_C.abi3.so")
    p.add_argument("--cases", default="128:16:4096,128:16:16384,128:64:16384,128:128:4096", help="b:h:t,...")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sets", type=int, default=2)
    p.add_argument("--min-samples", type=int, default=8000, help="enough for >= 1 s at the shortest rows")
    p.add_argument("--max-time", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--kernels", default="", help="comma-separated registry names (default: plan()'s pick)")
    p.add_argument("--json", type=pathlib.Path)
    a = p.parse_args(argv)
    import torch
    import cutelab
    from cutelab import mla, testing
    from flashmla_vllm import make_case
    torch.ops.load_library(str(a.so))
    fm_decode = torch.ops._flashmla_C.dense_decode_fwd
    device = torch.cuda.current_device()
    if cutelab._C.energy_unavailable(device):
        print(f"no energy counter: {cutelab._C.energy_unavailable(device)}", file=sys.stderr)
        return 3
    scale = D_QK ** -0.5
    rows = []
    print(f"{'case':22s} {'kernel':10s} {'round':>5s} {'us/call':>9s} {'n':>5s} {'J/call':>8s} {'mean W':>7s}")
    for spec in a.cases.split(","):
        b, h, t = (int(x) for x in spec.split(":"))
        prob = {"b": b, "s": 1, "h": h, "t": t}
        sets = []
        for k in range(a.sets):
            q, kv, table, lens, causal = make_case(torch, prob, a.seed + k, length_seed=a.seed)
            out = torch.empty(b, 1, h, D_V, device="cuda", dtype=torch.bfloat16)
            lse = torch.empty(b, h, 1, device="cuda", dtype=torch.float32)
            sets.append((q, kv, table, lens, out, lse, [None, None]))
        # One length draw and page table for every set: one plan a kernel serves them all.
        plans = [mla.plan(sets[0][3], sets[0][2], num_heads_q=h, max_seqlen=t, kernel=k or None)
                 for k in (a.kernels.split(",") if a.kernels else [""])]

        def lab(plan):
            def call(q, kv, table, lens, out, lse, meta):
                mla.decode(plan, q, kv, out=out, lse=lse)
            return call

        def fm(q, kv, table, lens, out, lse, meta):
            _, _, meta[0], meta[1] = fm_decode(q, kv, D_V, lens, table, scale, False, meta[0], meta[1], out)

        for s in sets:  # FlashMLA's schedule a set, made before capture
            fm(*s)
        torch.cuda.synchronize()
        for r in range(a.rounds):
            kernels = [(pl.kernel.rsplit("/", 1)[-1], lab(pl)) for pl in plans] + [("FlashMLA", fm)]
            for name, fn in kernels:
                it = iter(sets)
                res = testing.bench(fn, timing="rotating", get_inputs=lambda: next(it), sets=a.sets,
                                    min_samples=a.min_samples, max_samples=max(2000, a.min_samples),
                                    max_seconds=a.max_time)
                row = dict(case=f"b{b} h{h} t{t}", kernel=name, round=r, us=res.median_us,
                           j_per_call=res.joules_per_call, mean_w=res.mean_watts, energy_note=res.energy_note,
                           n=res.n, clocks=res.clocks)
                rows.append(row)
                energy = (f"{res.joules_per_call:8.4f} {res.mean_watts:7.1f}" if res.joules_per_call is not None
                          else f"{'-':>8s} {'-':>7s}  ({res.energy_note})")
                print(f"{row['case']:22s} {name:10s} {r:5d} {res.median_us:9.2f} {res.n:5d} {energy}", flush=True)
        del sets, plans
        torch.cuda.empty_cache()
    if a.json:
        doc = {"device": torch.cuda.get_device_name(), "argv": argv, "rows": rows}
        a.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
