import csv, sys
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
p = sys.argv[1]; n = int(sys.argv[2])
rows = list(csv.reader(open(p))); hdr = rows[1]
data = [dict(zip(hdr, r)) for r in rows[2:] if len(r) == len(hdr)]
reasons = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
tot = sum(num(d['Warp Stall Sampling (All Samples)']) for d in data)
idx = sorted(range(len(data)), key=lambda i: -num(data[i]['Warp Stall Sampling (All Samples)']))[:n]
for i in sorted(idx):
    d = data[i]; s = num(d['Warp Stall Sampling (All Samples)'])
    rs = sorted(((num(d[r]), r[6:]) for r in reasons), reverse=True)[:2]
    print(f"{i:5d} {d['Address']:>6} {s/tot*100:5.2f}% ex {num(d['Instructions Executed']):9.0f}  {d['Source'][:70]:70s} {rs[0][1]}:{rs[0][0]:.0f} {rs[1][1]}:{rs[1][0]:.0f}")
