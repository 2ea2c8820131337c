import csv, sys, re, collections
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
p = sys.argv[1]
rows = list(csv.reader(open(p))); hdr = rows[1]
data = [dict(zip(hdr, r)) for r in rows[2:] if len(r) == len(hdr)]
tot = sum(num(d['Warp Stall Sampling (All Samples)']) for d in data)
# map BRA target addresses (retry loops) -> the SYNCS at that target
addr = {int(d['Address'], 16): i for i, d in enumerate(data)}
groups = collections.defaultdict(float); cats = collections.defaultdict(float)
for i, d in enumerate(data):
    s = num(d['Warp Stall Sampling (All Samples)'])
    src = d['Source']
    key = None
    if 'BRA' in src and num(d['stall_long_sb']) > 0.5 * s and s > 0:
        # look back for the SYNCS try-wait
        for j in range(i - 1, max(0, i - 8), -1):
            m = re.search(r'SYNCS\.PHASECHK\S*\s+\S+\s*\[([^\]]+)\]', data[j]['Source'])
            if m: key = 'mbar ' + m.group(1); break
        cats['mbarrier wait (BRA)'] += s
    elif 'WARPGROUP.DEPBAR' in src: cats['wgmma wait'] += s
    elif num(d['stall_barrier']) > 0.5 * s and s > 0: cats['named barrier / bar.sync'] += s
    elif 'HGMMA' in src: cats['HGMMA issue'] += s
    else: cats['other'] += s
    if key: groups[key] += s
print(f"== {p}: samples {tot:.0f}")
for k, v in sorted(cats.items(), key=lambda x: -x[1]): print(f"  {k:28s} {v:8.0f} {v/tot*100:5.1f}%")
for k, v in sorted(groups.items(), key=lambda x: -x[1])[:30]: print(f"    {k:40s} {v:8.0f} {v/tot*100:5.1f}%")
