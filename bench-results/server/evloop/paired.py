import sys,re,collections
# paired.py A B LOG...: per round, B/A of ops/s and cpu/op for each workload
A,B=sys.argv[1],sys.argv[2]
def num(s):
    m=re.match(r'([\d.]+)(k)?',s); return float(m.group(1))*(1000 if m.group(2) else 1)
d={}
for f in sys.argv[3:]:
    for l in open(f):
        p=l.split()
        if len(p)<15 or p[5]!='getset': continue
        d[(f,p[0],p[1].rstrip('_'),p[2]+' '+p[3])]=(num(p[8]),num(p[14]))
out=collections.defaultdict(list)
for (f,r,n,w),(ops,cpu) in d.items():
    if n==A and (f,r,B,w) in d:
        o2,c2=d[(f,r,B,w)]; out[w].append((o2/ops,c2/cpu))
for w,v in sorted(out.items()):
    print(f"{w:9} ops/s {' '.join(f'{x[0]:.2f}' for x in v)}   cpu/op {' '.join(f'{x[1]:.2f}' for x in v)}")
