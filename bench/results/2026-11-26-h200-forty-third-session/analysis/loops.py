import re, sys, collections
f=sys.argv[1]; minspan=int(sys.argv[2]) if len(sys.argv)>2 else 600
lines=open(f).read().split('\n'); ins=[]
for i,l in enumerate(lines):
    m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
    if m: ins.append((int(m.group(1),16),m.group(2).strip()))
print(f, len(ins), 'instr; HGMMA', sum('HGMMA' in t for _,t in ins), 'LDL/STL at', [hex(a) for a,t in ins if 'LDL' in t or 'STL' in t])
for a,t in ins:
    if 'BRA' in t and 'U.ANY' not in t:
        tgt=re.search(r'0x([0-9a-f]+)',t)
        if tgt and int(tgt.group(1),16)<a and minspan<(a-int(tgt.group(1),16))//16<1600:
            lo=int(tgt.group(1),16); body=[x for x in ins if lo<=x[0]<=a]
            c=collections.Counter(re.sub(r'^@!?U?P\w+\s+','',x[1]).split()[0] for x in body)
            print(f"  loop {lo:#x}-{a:#x}: {len(body)} instr, HGMMA {sum('HGMMA' in x[1] for x in body)}, FSEL {c['FSEL']}, ISETP.GE {c['ISETP.GE.AND']}, R2UR {c['R2UR']}, MUFU.RCP {c['MUFU.RCP']}, LDL/STL {c['LDL']+c['STL']}")
