#!/usr/bin/env python3
"""Warp-state samples of an Nsight Compute source page joined to source lines (thirty-second session).
Inputs: the SASS of the exact object with line information (`cuobjdump -xelf all X.o`, then
`nvdisasm --print-line-info -c X.sm_90a.cubin > X.lines.sass`) and the gzipped source page
(`ncu -i R --page source --csv --print-source sass`). Each instruction is charged to the last line of
KFILE seen before it (inlined CUTLASS code carries its own header's line), and samples are summed by that
line with their three largest stall reasons; then the forty instructions with the most samples.
  ncu_source_lines.py X.lines.sass SOURCE.csv.gz paged_sm90_fp8_v21/kernel.cuh"""
import collections, csv, gzip, re, sys

sass, src, kfile = sys.argv[1], sys.argv[2], sys.argv[3]
info = {}
cur = lastk = None
for line in open(sass):
    m = re.match(r'\s*//## File "([^"]+)", line (\d+)', line)
    if m:
        cur = (m.group(1).split('/')[-1], int(m.group(2)))
        if m.group(1).endswith(kfile):
            lastk = int(m.group(2))
        continue
    m = re.match(r'\s*/\*([0-9a-f]+)\*/\s+(.*?);', line)
    if m:
        info[int(m.group(1), 16)] = (cur, lastk, m.group(2).strip())
rows = list(csv.reader(gzip.open(src, 'rt')))
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
data = [r for r in rows[2:] if len(r) >= len(hdr)]
a0 = int(data[0][ix['Address']], 16)
samples = 'Warp Stall Sampling (All Samples)'
reasons = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
by_line, by_reason, top, total = collections.Counter(), collections.defaultdict(collections.Counter), [], 0
for r in data:
    a = int(r[ix['Address']], 16) - a0
    s = int(r[ix[samples]] or 0)
    total += s
    cur, lk, txt = info.get(a, (None, None, '?'))
    by_line[lk] += s
    for h in reasons:
        v = int(r[ix[h]] or 0)
        if v:
            by_reason[lk][h.replace('stall_', '')] += v
    top.append((s, a, txt, cur, lk, int(r[ix['Instructions Executed']] or 0)))
print('total samples', total)
for lk, s in sorted(by_line.items(), key=lambda x: -x[1])[:40]:
    print(f'{str(lk):>5} {s:7d} {100 * s / total:5.1f}%  ' +
          ' '.join(f'{k}:{v}' for k, v in by_reason[lk].most_common(3)))
print('--- top instructions')
for s, a, txt, cur, lk, ex in sorted(top, reverse=True)[:40]:
    print(f'{a:6x} {s:6d} {100 * s / total:5.1f}% exec {ex:8d} k{lk} {cur} {txt[:60]}')
