import csv, gzip, sys
def load(f):
    with gzip.open(f, 'rt') as fh: lines = fh.readlines()
    r = csv.reader(lines[1:]); hdr = next(r)
    rows = [dict(zip(hdr, x)) for x in r if len(x) >= len(hdr)]
    return [(int(d['Warp Stall Sampling (All Samples)'] or 0), int(d['Instructions Executed'] or 0)) for d in rows]
a = load(sys.argv[1]); b = load(sys.argv[2])
cls = {}
for (sa, ea), (sb, eb) in zip(a, b):
    k = ea
    c = cls.setdefault(k, [0, 0, 0])
    c[0] += sa; c[1] += sb; c[2] += 1
for k, (sa, sb, n) in sorted(cls.items(), key=lambda kv: -(kv[1][0] - kv[1][1]))[:15]:
    print(f"ex={k:7d} n={n:5d} samples {sa:6d} {sb:6d} delta {sa-sb:+6d}")
