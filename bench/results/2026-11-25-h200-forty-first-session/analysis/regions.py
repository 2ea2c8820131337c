# Per warpgroup and pair: warp samples of each hot loop region (code executed >= threshold times), split by what
# the instructions wait for, in cycles a pair. Usage: regions.py <ncu --page source --csv --print-source sass file>
#   <hot exec threshold> <cycles a pair> <warps present per CTA>
import csv, sys, re, collections
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
p, lo, pair_cycles, warps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = list(csv.reader(open(p))); hdr = rows[1]
data = [dict(zip(hdr, r)) for r in rows[2:] if len(r) == len(hdr)]
tot = sum(num(d['Warp Stall Sampling (All Samples)']) for d in data)
per_warp = tot / warps
cyc = lambda s: s / 4 / per_warp * pair_cycles
def kind(src, d):
    s = num(d['Warp Stall Sampling (All Samples)'])
    if 'HGMMA' in src: return 'hgmma-issue'
    if 'WARPGROUP.DEPBAR' in src: return 'wgmma-wait'
    if re.search(r'\bBAR\.', src): return 'namedbar'
    if 'BRA' in src and s > 0 and num(d['stall_long_sb']) > 0.5 * s: return 'mbar-wait'
    if s > 0 and num(d['stall_barrier']) > 0.5 * s: return 'namedbar(after)'
    return 'work'
regions = []; last = -1000
for i, d in enumerate(data):
    if num(d['Instructions Executed']) < lo: continue
    if i - last > 300: regions.append(collections.defaultdict(float)); regions[-1]['_start'] = i
    last = i; regions[-1]['_end'] = i
    regions[-1][kind(d['Source'], d)] += num(d['Warp Stall Sampling (All Samples)'])
# out-of-line retry loops (low exec counts, long_sb) counted apart
cold = collections.defaultdict(float)
for d in data:
    if num(d['Instructions Executed']) < lo:
        cold[kind(d['Source'], d)] += num(d['Warp Stall Sampling (All Samples)'])
for r in regions:
    ks = [k for k in r if not k.startswith('_')]
    print(f"region {int(r['_start'])}-{int(r['_end'])}: " + ', '.join(f"{k} {cyc(r[k]):.0f}" for k in sorted(ks)) + f" | sum {cyc(sum(r[k] for k in ks)):.0f}")
print("cold code (x4 warps units): " + ', '.join(f"{k} {cyc(v):.0f}" for k, v in cold.items()))
