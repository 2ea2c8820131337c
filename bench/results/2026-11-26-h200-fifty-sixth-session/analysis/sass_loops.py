# Per-instruction warp-state samples (ncu --page source --csv --print-source sass) of a kernel's two
# hottest loops: samples and stall reasons per loop, and the instructions holding the most samples.
import csv, gzip, re, sys, collections
path = sys.argv[1]; top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
op = gzip.open if path.endswith('.gz') else open
with op(path, 'rt') as fh:
    lines = [l for l in fh if l.startswith('"')]
rows = list(csv.DictReader(lines[1:]))  # line 0: kernel name
reasons = [k for k in rows[0] if k.startswith('stall_') and 'Not Issued' not in k]
ins = []
for r in rows:
    try: a = int(r['Address'], 16)
    except: continue
    ins.append((a, r['Source'].strip(), int(r['Warp Stall Sampling (All Samples)'] or 0), int(r['Instructions Executed'] or 0),
                {k: int(r[k] or 0) for k in reasons}))
ins.sort()
base = ins[0][0]
tot = sum(x[2] for x in ins)
print(f"== {path}: {len(ins)} instr, samples {tot}, executed {sum(x[3] for x in ins)}")
# loops: backward branches spanning >= 200 instructions, the two with most samples
loops = []
for i, (a, s, *_ ) in enumerate(ins):
    m = re.search(r'BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)', s)
    if 'BRA' in s and m:
        t = int(m.group(1), 16)
        # ncu prints branch targets as offsets from the function start or absolute: try both
        if t < a and 200 <= (a - t) // 16 <= 1600:
            loops.append((t, a))
cand = []
for lo, hi in set(loops):
    body = [x for x in ins if lo <= x[0] <= hi]
    if sum(x[2] for x in body): cand.append((sum(x[2] for x in body), lo, hi, body))
cand.sort(reverse=True)
chosen = []
for c in cand:
    if all(c[2] < o[1] or c[1] > o[2] for o in chosen): chosen.append(c)
    if len(chosen) == 2: break
for smp, lo, hi, body in sorted(chosen, key=lambda c: c[1]):
    iters = max(x[3] for x in body)
    rs = collections.Counter()
    for x in body: rs.update(x[4])
    print(f"-- loop +{lo-base:#x}..+{hi-base:#x}: {len(body)} instr, samples {smp} ({100*smp/tot:.1f}%), executed {sum(x[3] for x in body)} (max per instr {iters})")
    print("   reasons: " + ", ".join(f"{k[6:]} {100*v/smp:.1f}%" for k, v in rs.most_common(8)))
    for x in sorted(body, key=lambda x: -x[2])[:top]:
        rr = ", ".join(f"{k[6:]} {v}" for k, v in sorted(x[4].items(), key=lambda kv: -kv[1])[:3] if v)
        print(f"   +{x[0]-base:#07x} {x[2]:6d} {100*x[2]/smp:5.1f}%  {x[1][:60]:60s} [{rr}]")
