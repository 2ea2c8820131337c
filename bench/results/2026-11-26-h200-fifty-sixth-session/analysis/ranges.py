import csv, gzip, sys, collections
path=sys.argv[1]; ranges=[(int(a,16),int(b,16)) for a,b in (r.split('-') for r in sys.argv[2].split(','))]; thr=float(sys.argv[3]) if len(sys.argv)>3 else 0.8
lines=[l for l in gzip.open(path,'rt') if l.startswith('"')]
rows=list(csv.DictReader(lines[1:]))
reasons=[k for k in rows[0] if k.startswith('stall_') and 'Not Issued' not in k]
base=int(rows[0]['Address'],16)
tot=sum(int(r['Warp Stall Sampling (All Samples)'] or 0) for r in rows)
print(f"== {path} samples {tot}")
for lo,hi in ranges:
    body=[r for r in rows if lo<=int(r['Address'],16)-base<=hi]
    smp=sum(int(r['Warp Stall Sampling (All Samples)'] or 0) for r in body)
    ex=max(int(r['Instructions Executed'] or 0) for r in body)
    rs=collections.Counter()
    for r in body: rs.update({k[6:]:int(r[k] or 0) for k in reasons})
    print(f"-- +{lo:#x}..+{hi:#x}: {len(body)} instr, samples {smp} ({100*smp/tot:.1f}% of kernel), executed {sum(int(r['Instructions Executed'] or 0) for r in body)}, iterations(max) {ex}")
    print("   " + ", ".join(f"{k} {100*v/smp:.1f}%" for k,v in rs.most_common(9)))
    acc=0
    for r in body:
        s=int(r['Warp Stall Sampling (All Samples)'] or 0)
        acc+=s
        if s>=thr/100*smp:
            top=sorted(((k[6:],int(r[k] or 0)) for k in reasons), key=lambda kv:-kv[1])[:2]
            print(f"   +{int(r['Address'],16)-base:#07x} {s:6d} {100*s/smp:5.1f}% cum {100*acc/smp:5.1f}%  {r['Source'].strip()[:58]:58s} {top}")
