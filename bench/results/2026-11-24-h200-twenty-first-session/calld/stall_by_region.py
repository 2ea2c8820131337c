import csv, gzip, sys
rows=list(csv.reader(gzip.open(sys.argv[1],'rt')))
hdr=rows[1]; data=rows[2:]
print(len(data), "instrs")
ci={h:i for i,h in enumerate(hdr)}
S=ci["Warp Stall Sampling (All Samples)"]; E=ci["Instructions Executed"]
stalls=[h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
tot=sum(int(r[S]) for r in data)
regions=eval(sys.argv[2])
def agg(a,b):
    s=sum(int(r[S]) for r in data[a-1:b]); ex=sum(int(r[E]) for r in data[a-1:b])
    st={h:sum(int(r[ci[h]]) for r in data[a-1:b]) for h in stalls}
    top=sorted(st.items(),key=lambda x:-x[1])[:5]
    return s,ex,top
print("total samples",tot)
for name,(a,b) in regions.items():
    s,ex,top=agg(a,b)
    print(f"{name:22s} {a}-{b}: samples {s} ({100*s/tot:.1f}%), executed {ex}; "+", ".join(f"{k[6:]} {v}" for k,v in top))
n=int(sys.argv[3]) if len(sys.argv)>3 else 25
idx=sorted(range(len(data)),key=lambda i:-int(data[i][S]))[:n]
for i in sorted(idx):
    r=data[i]; st=sorted(((h,int(r[ci[h]])) for h in stalls),key=lambda x:-x[1])[:3]
    print(f"{i+1:5d} {int(r[S]):6d} ex {r[E]:>7s} {r[1].strip()[:60]:60s} "+", ".join(f"{k[6:]} {v}" for k,v in st))
