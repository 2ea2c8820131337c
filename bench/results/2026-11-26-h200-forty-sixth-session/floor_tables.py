#!/usr/bin/env python3
"""The forty-sixth session's floor tables from the calls' suite JSON (gzipped beside this file): calls a-b
took the floor with 16-byte loads (the read ceiling's kernel), call d with bulk copies (what --floor does
since call c's probe found them 3-5% faster).

  python3 floor_tables.py [results dir]   # prints fp8-floor-table.md's table and the bf16 reading
ANCHORS.md's FlashMLA bf16 lab-method figures are written out below (issue 11's bar is each / 1.8).
"""
import gzip, json, math, os, sys

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ANCHOR_BF16 = [166.6, 610.3, 167.9, 622.0, 170.0, 649.0, 253.7, 1032.6, 279.1, 547.2, 1048.2, 2093.5,
               506.0, 982.3, 2039.4, 4131.6, 23.6, 37.4, 15.3, 23.3, 34.8, 499.0, 316.5]  # suite rows 1-23
ANCHOR_FP8 = {(16, 4096): 166.6, (16, 16384): 610.3, (32, 4096): 167.9, (32, 16384): 622.0,
              (64, 4096): 170.0, (64, 16384): 649.0}
MEMORY_BOUND = [1, 2, 3, 4, 5, 6, 18, 19, 21, 23]  # bf16 suite rows with h_q * s_q <= 64


def load(rel):
    with gzip.open(os.path.join(HERE, rel)) as f:
        return json.load(f)


def floors_of(rels):
    """Per FP8 row: floor timings, each run's fastest kernel, bytes."""
    floors, best, size = {}, {}, {}
    for tag, rel in rels:
        for row in load(rel)["runs"]:
            r = row["result"]
            t = (r.get("timing") or {}).get("median_us")
            if t is None:
                continue  # a kernel that does not serve the row
            p = r["problem"]["params"]
            key = (p["kv-dtype"], p["h"], p["t"])
            floors.setdefault(key, []).append(r["read_floor"]["timing"]["median_us"])
            size[key] = r["read_floor"]["bytes"]
            k = r["kernel"].split("/")[-1]
            if (key, tag) not in best or t < best[(key, tag)][0]:
                best[(key, tag)] = (t, k)
    return floors, best, size


def fp8_table():
    # Call d: the floor by bulk copies (the committed --floor); calls a-b: by 16-byte loads (its first form).
    floors, best, size = floors_of((("d1", "c46d/fp8r1.json.gz"), ("d2", "c46d/fp8r2.json.gz")))
    ldg, _, _ = floors_of((("a", "c46a/fp8.json.gz"), ("b1", "c46b/fp8.json.gz"), ("b2", "c46b/fp8r2.json.gz")))
    print("| b128 s1 row | MiB read | floor µs, bulk copies (min-max) | bar µs | bar / floor | best lab kernel µs a run (untuned) | best / floor | floor by 16-byte loads (calls a-b) |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(floors, key=lambda k: (k[0], k[2], k[1])):
        fmt, h, t = key
        v = sorted(floors[key])
        floor = sum(v) / len(v)
        runs = sorted(x for (k, _), x in best.items() if k == key)
        names = "/".join(sorted({n for _, n in runs}))
        bar = ANCHOR_FP8.get((h, t))
        bar_cell = f"{bar / 1.8:.2f}" if bar else "- (not slower than bf16)"
        ratio = "-" if not bar else f"{bar / 1.8 / floor:.3f}"
        lv = ldg[key]
        print(f"| {fmt} h{h} t{t} | {size[key] / 2**20:.1f} | {floor:.1f} ({v[0]:.1f}-{v[-1]:.1f}) | {bar_cell} | "
              f"{ratio} | {runs[0][0]:.1f}-{runs[-1][0]:.1f} ({names}) | {runs[0][0] / floor:.3f}-{runs[-1][0] / floor:.3f} | "
              f"{sum(lv) / len(lv):.1f} |")


def bf16_reading():
    for tag, rel in (("a (16-byte loads)", "c46a/bf16.json.gz"), ("b (16-byte loads)", "c46b/bf16.json.gz"),
                     ("d (bulk copies)", "c46d/bf16.json.gz")):
        rows = []
        for i, row in enumerate(load(rel)["runs"][:23]):
            r = row["result"]
            rows.append((i + 1, r["timing"]["median_us"], r["read_floor"]["timing"]["median_us"], ANCHOR_BF16[i]))
        g = math.exp(sum(math.log(a / t) for _, t, _, a in rows) / len(rows))
        g_floor = math.exp(sum(math.log(a / (f if i in MEMORY_BOUND else t)) for i, t, f, a in rows) / len(rows))
        print(f"call {tag}: v11 untuned {g:.3f}x ANCHORS.md; with the ten memory-bound rows at exactly their floor {g_floor:.3f}x")
        print("  ours / floor:   " + " ".join(f"#{i} {t / f:.3f}" for i, t, f, _ in rows if i in MEMORY_BOUND))
        print("  anchor / floor: " + " ".join(f"#{i} {a / f:.3f}" for i, _, f, a in rows if i in MEMORY_BOUND))


if __name__ == "__main__":
    fp8_table()
    print()
    bf16_reading()
