import csv, gzip, sys
f = sys.argv[1]
with gzip.open(f, 'rt') as fh: lines = fh.readlines()
r = csv.reader(lines[1:]); hdr = next(r)
rows = [dict(zip(hdr, x)) for x in r if len(x) >= len(hdr)]
base = int(rows[0]['Address'], 16)
for o in sys.argv[2:]:
    o = int(o, 16)
    i = [k for k, d in enumerate(rows) if int(d['Address'], 16) - base == o][0]
    print("----", hex(o))
    for d in rows[i-14:i+3]:
        print(f"{int(d['Address'],16)-base:#07x} {d['Warp Stall Sampling (All Samples)']:>6s} {d['Instructions Executed']:>7s} {d['Source'].strip()[:90]}")
