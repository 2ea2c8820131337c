#!/usr/bin/env python3
"""Warp-stall samples of one Nsight Compute source-counter export, summed over ranges of SASS
instructions (index = rank of the instruction's address; see --list). Usage:
  time_budget.py SRC.csv.gz --list            # every sampled instruction with its index
  time_budget.py SRC.csv.gz name=lo:hi ...    # samples per named range, % of all and of its group
A name "group/phase" is summed into its group too."""
import csv, gzip, re, sys, collections

def load(path):
    rows = list(csv.reader(gzip.open(path, 'rt')))
    hdr = rows[2]; idx = {h: i for i, h in enumerate(hdr)}
    seen = {}
    for r in rows[3:]:  # source rows are followed by their SASS rows; the export repeats some
        if len(r) >= 10 and r[2].startswith('0x'):
            seen.setdefault(int(r[2], 16), r)
    order = [seen[a] for a in sorted(seen)]
    reasons = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    return order, idx, reasons

def main():
    order, idx, reasons = load(sys.argv[1])
    samples = lambda r: int(r[idx['Warp Stall Sampling (All Samples)']])
    total = sum(samples(r) for r in order)
    if sys.argv[2:] == ['--list']:
        for i, r in enumerate(order):
            if samples(r):
                print(f"{i:5d} {samples(r):6d} ex={r[idx['Instructions Executed']]:>8s} {r[3].strip()}")
        return
    groups = collections.Counter(); rows = []
    for arg in sys.argv[2:]:
        name, span = arg.split('=')
        lo, hi = map(int, span.split(':'))
        part = order[lo:hi]
        s = sum(samples(r) for r in part)
        why = collections.Counter()
        for r in part:
            for c in reasons: why[c[6:]] += int(r[idx[c]])
        top = ', '.join(f"{k} {v / max(s, 1) * 100:.0f}%" for k, v in why.most_common(3))
        rows.append((name, s, top)); groups[name.split('/')[0]] += s
    print(f"samples: {total}")
    print(f"{'range':28s} {'% all':>6s} {'% group':>8s}  top stall reasons")
    for name, s, top in rows:
        g = name.split('/')[0]
        print(f"{name:28s} {s / total * 100:6.1f} {s / groups[g] * 100:8.1f}  {top}")
    for g, s in groups.items(): print(f"{g + ' (sum)':28s} {s / total * 100:6.1f}")

main()
