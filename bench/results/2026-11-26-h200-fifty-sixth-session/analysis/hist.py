import re, sys, collections
def loop(f, lo, hi):
    ins=[]
    for l in open(f):
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
        if m:
            a=int(m.group(1),16)
            if lo<=a<=hi: ins.append(re.sub(r'^@!?U?P\w+\s+','',m.group(2).strip()).split()[0])
    return collections.Counter(ins)
a=loop(sys.argv[1], int(sys.argv[2],16), int(sys.argv[3],16))
b=loop(sys.argv[4], int(sys.argv[5],16), int(sys.argv[6],16))
keys=sorted(set(a)|set(b), key=lambda k: -(abs(a[k]-b[k])))
print("total", sum(a.values()), sum(b.values()))
for k in keys:
    if a[k]!=b[k]: print(f"{k:24s} {a[k]:5d} {b[k]:5d} {b[k]-a[k]:+5d}")
