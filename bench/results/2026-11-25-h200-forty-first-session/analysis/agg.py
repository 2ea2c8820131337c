import csv, sys, re, collections
def load(p):
    rows = list(csv.reader(open(p)))
    hdr = rows[1]; data = []
    for r in rows[2:]:
        if len(r) != len(hdr): continue
        d = dict(zip(hdr, r)); data.append(d)
    return hdr, data
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
for p in sys.argv[1:]:
    hdr, data = load(p)
    reasons = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    tot = sum(num(d['Warp Stall Sampling (All Samples)']) for d in data)
    ins = sum(num(d['Instructions Executed']) for d in data)
    print(f"== {p}: {len(data)} instr, samples {tot:.0f}, executed {ins:.0f}")
    rs = {r: sum(num(d[r]) for d in data) for r in reasons}
    print('  reasons: ' + ', '.join(f"{r[6:]} {v/tot*100:.1f}%" for r, v in sorted(rs.items(), key=lambda x: -x[1]) if v/tot > 0.005))
    by = collections.defaultdict(lambda: [0, 0])
    for d in data:
        op = d['Source'].split()
        op = [o for o in op if not o.startswith('@')]
        op = op[0].split('.')[0] if op else '?'
        by[op][0] += num(d['Warp Stall Sampling (All Samples)']); by[op][1] += num(d['Instructions Executed'])
    print('  by opcode (samples %, executed %): ' + ', '.join(f"{k} {v[0]/tot*100:.1f}/{v[1]/ins*100:.1f}" for k, v in sorted(by.items(), key=lambda x: -x[1][0])[:22]))
