#!/usr/bin/env python3
"""Per-role figures from an Nsight Compute source page (`ncu -i R --page source --csv --print-source sass`,
gzipped): for a SASS address range (offsets from the kernel's first instruction, hex) and the number of
times the role's per-page code runs (warps x pages), print its warp instructions a page, its warp-state
samples by reason, and its opcode mix. `regions` lists 0x1000 blocks with their samples and dominant
execution counts, to find each role's range.
  ncu_source_roles.py FILE regions
  ncu_source_roles.py FILE LO HI RUNS"""
import collections, csv, gzip, sys

rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
hdr = rows[1]
data = [r for r in rows[2:] if len(r) >= len(hdr)]
ix = {h: i for i, h in enumerate(hdr)}
reasons = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
a0 = int(data[0][ix['Address']], 16)
num = lambda r, h: int(r[ix[h]] or 0)

if sys.argv[2] == 'regions':
    agg = collections.OrderedDict()
    for r in data:
        d = agg.setdefault((int(r[ix['Address']], 16) - a0) // 0x1000, [0, collections.Counter()])
        d[0] += num(r, 'Warp Stall Sampling (All Samples)')
        if num(r, 'Instructions Executed'): d[1][num(r, 'Instructions Executed')] += 1
    total = sum(d[0] for d in agg.values())
    for b, d in agg.items():
        print(f'{b * 0x1000:6x} {d[0]:6d} {100 * d[0] / total:5.1f}% exec counts {d[1].most_common(2)}')
    sys.exit()

lo, hi, runs = int(sys.argv[2], 16), int(sys.argv[3], 16), float(sys.argv[4])
insts, samples, why, ops = 0, 0, collections.Counter(), collections.Counter()
for r in data:
    if not lo <= int(r[ix['Address']], 16) - a0 < hi: continue
    n = num(r, 'Instructions Executed')
    insts += n
    samples += num(r, 'Warp Stall Sampling (All Samples)')
    for h in reasons: why[h[6:]] += num(r, h)
    src = r[ix['Source']].split()
    op = src[1] if src[0].startswith('@') else src[0]
    ops[op.split('.')[0]] += n / runs
print(f'warp instructions a page {insts / runs:.0f}, samples {samples}: ' +
      ', '.join(f'{k} {100 * v / samples:.0f}%' for k, v in why.most_common(7)))
print('opcodes a page: ' + ', '.join(f'{k} {v:.0f}' for k, v in ops.most_common(16)))
