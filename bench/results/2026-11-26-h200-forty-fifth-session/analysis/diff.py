import csv, gzip, sys
def load(f):
    rows = []
    with gzip.open(f, 'rt') as fh:
        lines = fh.readlines()
    r = csv.reader(lines[1:])
    hdr = next(r)
    for row in r:
        if len(row) < len(hdr): continue
        d = dict(zip(hdr, row))
        rows.append(d)
    base = int(rows[0]['Address'], 16)
    out = []
    for d in rows:
        off = int(d['Address'], 16) - base
        s = int(d['Warp Stall Sampling (All Samples)'] or 0)
        st = {k: int(v) for k, v in d.items() if k.startswith('stall_') and 'Not Issued' not in k and v.isdigit() and int(v)}
        out.append((off, d['Source'].strip(), s, st, int(d['Instructions Executed'] or 0)))
    return out
a = load(sys.argv[1]); b = load(sys.argv[2])
ta = sum(x[2] for x in a); tb = sum(x[2] for x in b)
print("total samples", ta, tb, "delta", ta - tb)
def agg(rows):
    t = {}
    for x in rows:
        for k, v in x[3].items(): t[k] = t.get(k, 0) + v
    return t
sa, sb = agg(a), agg(b)
for k in sorted(set(sa) | set(sb), key=lambda k: -(sa.get(k, 0) - sb.get(k, 0))):
    print(f"  {k:28s} {sa.get(k,0):8d} {sb.get(k,0):8d} {sa.get(k,0)-sb.get(k,0):+8d}")
N = int(sys.argv[3]) if len(sys.argv) > 3 else 40
deltas = sorted(range(len(a)), key=lambda i: -(a[i][2] - b[i][2]))
print("top deltas")
for i in deltas[:N]:
    x, y = a[i], b[i]
    top = sorted(x[3].items(), key=lambda kv: -kv[1])[:3]
    print(f"{i:5d} {x[0]:#07x} {x[2]:6d} {y[2]:6d} {x[2]-y[2]:+6d} ex={x[4]:7d}  {x[1][:60]:60s} {top}")
