#!/usr/bin/env python3
"""Which configs win a kernel's tuning sweeps across recorded runs.

Reads every suite JSON under the given folders (`cutelab suite --tune --json`, gzipped or not), keeps
the rows of one kernel whose sweep timed at least --min-configs configs, and prints for each row the
geometric mean over runs of each config's median / that run's best median, best first. A single
sweep's order moves with the board's power state (the long rows' medians are the boost or the capped
clock by a race); the mean over many runs is what a default config should follow.

    bench/tools/config_history.py bench/results --kernel paged_sm90/v3 --require fo8_mb1_evictfirst_p16
    bench/tools/config_history.py bench/results --kernel paged_sm90/v3 --show fo8_mb1_evictnormal
    bench/tools/config_history.py bench/results --kernel paged_sm90/v3 --factor kv_evict_first --factor partials

--basis picks the sweeps ranked by the flush figure (default; every sweep recorded before the basis
existed) or by the rotating one (`--timing rotating --tune`).

--factor PARAM prints, per row, what a config parameter is worth with the others held: the geometric mean,
over pairs of configs that differ only in PARAM, of (mean ratio with the value) / (mean ratio with the
parameter's first value in sorted order).
"""
import argparse
import collections
import gzip
import json
import math
import pathlib
import sys


def suite_runs(folders):
    for folder in folders:
        for path in sorted(pathlib.Path(folder).rglob("*.json*")):
            if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
                continue
            try:
                with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as f:
                    doc = json.load(f)
            except (OSError, ValueError, EOFError):
                continue
            if isinstance(doc, dict) and isinstance(doc.get("runs"), list):
                yield path, doc["runs"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="folders searched for suite JSON files")
    ap.add_argument("--kernel", required=True, help="kernel name or its ending, e.g. paged_sm90/v3")
    ap.add_argument("--require", default="", help="keep only sweeps that timed this config (the current set)")
    ap.add_argument("--min-configs", type=int, default=10, help="skip sweeps with fewer timed configs")
    ap.add_argument("--show", action="append", default=[], help="also print this config's ratio (repeatable)")
    ap.add_argument("--top", type=int, default=3, help="configs listed per row")
    ap.add_argument("--factor", action="append", default=[], help="a config parameter to weigh (repeatable)")
    ap.add_argument("--basis", choices=("flush", "rotating"), default="flush",
                    help="the figure the sweeps ranked by (default: flush)")
    args = ap.parse_args()

    ratios = collections.defaultdict(lambda: collections.defaultdict(list))  # row -> config -> log ratios
    params = {}  # config -> its parameters (as the sweep recorded them)
    runs_per_row = collections.Counter()
    files = 0
    for _, runs in suite_runs(args.folders):
        used = False
        for entry in runs:
            result = entry.get("result", entry) if isinstance(entry, dict) else {}
            if not str(result.get("kernel", "")).endswith(args.kernel):
                continue
            timed = {c["config"]: c["timing"]["median_us"] for c in result.get("tuning") or []
                     if c.get("status") == "ok" and c.get("timing") and c.get("basis", "flush") == args.basis}
            for c in result.get("tuning") or []:
                if isinstance(c.get("params"), dict):
                    params[c["config"]] = c["params"]
            if len(timed) < args.min_configs or (args.require and args.require not in timed):
                continue
            best = min(timed.values())
            row = entry.get("label") or json.dumps(result.get("problem"))
            for name, us in timed.items():
                ratios[row][name].append(math.log(us / best))
            runs_per_row[row] += 1
            used = True
        files += used
    if not ratios:
        sys.exit(f"no tuned sweeps of a kernel ending in {args.kernel!r} under {args.folders}")
    print(f"{args.kernel}: {sum(runs_per_row.values())} {args.basis} sweeps from {files} files; per row the geometric mean "
          "of median / the run's best median over the runs that timed the config")
    for row in sorted(ratios):
        per = ratios[row]
        n = runs_per_row[row]
        means = {c: math.exp(sum(v) / len(v)) for c, v in per.items() if len(v) >= max(1, n // 2)}
        ranked = sorted(means.items(), key=lambda kv: kv[1])
        line = f"{row[:48]:48s} n={n:3d}  " + "  ".join(f"{c} {r:.3f}" for c, r in ranked[: args.top])
        for c in args.show:
            line += f"  | {c} {means[c]:.3f}" if c in means else f"  | {c} -"
        for name in args.factor:
            line += "  | " + factor_text(name, means, params)
        print(line)


def factor_text(name, means, params):
    """`name` value/reference geometric means over config pairs that differ only in `name`."""
    by_rest = collections.defaultdict(dict)  # the other parameters -> {value: mean ratio}
    for c, r in means.items():
        p = params.get(c)
        if p is None or name not in p:
            continue
        rest = json.dumps({k: v for k, v in p.items() if k != name}, sort_keys=True)
        by_rest[rest][json.dumps(p[name])] = r
    values = sorted({v for d in by_rest.values() for v in d})
    if len(values) < 2:
        return f"{name} -"
    ref = values[0]
    parts = []
    for v in values[1:]:
        logs = [math.log(d[v] / d[ref]) for d in by_rest.values() if v in d and ref in d]
        if logs:
            parts.append(f"{name} {v}/{ref} {math.exp(sum(logs) / len(logs)):.3f}")
    return ", ".join(parts) if parts else f"{name} -"


if __name__ == "__main__":
    main()
