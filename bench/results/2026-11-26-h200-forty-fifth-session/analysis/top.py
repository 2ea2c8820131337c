import csv, gzip, sys
def load(f):
    with gzip.open(f, 'rt') as fh: lines = fh.readlines()
    r = csv.reader(lines[1:]); hdr = next(r)
    rows = [dict(zip(hdr, x)) for x in r if len(x) >= len(hdr)]
    base = int(rows[0]['Address'], 16)
    return [(int(d['Address'],16)-base, d['Source'].strip(), int(d['Warp Stall Sampling (All Samples)'] or 0), int(d['Instructions Executed'] or 0), {k:int(v) for k,v in d.items() if k.startswith('stall_') and 'Not' not in k and v.isdigit() and int(v)}) for d in rows]
a = load(sys.argv[1]); b = load(sys.argv[2])
idx = sorted(range(len(a)), key=lambda i: -a[i][2])[:int(sys.argv[3])]
for i in sorted(idx):
    x = a[i]; prev = a[i-1][1] if i else ''
    top = sorted(x[4].items(), key=lambda kv: -kv[1])[:2]
    print(f"{x[0]:#07x} {x[2]:6d} {b[i][2]:6d} ex={x[3]:6d} {x[1][:44]:44s} | prev: {prev[:60]:60s} {top}")
