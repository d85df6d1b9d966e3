import sys,re,statistics,collections
# summ.py LOG...: per server and workload: ops/s, p99, cpu/op per round, with medians
d=collections.defaultdict(list)
def num(s):
    m=re.match(r'([\d.]+)(k|ms|µs|s)?',s); v=float(m.group(1)); u=m.group(2)
    return v*1000 if u=='k' else v
for f in sys.argv[1:]:
    for l in open(f):
        p=l.split()
        if len(p)<12 or p[5]!='getset': continue
        name=p[1].replace('LSMGO_EVLOOP_ADDR=127.0.0.1_9192_','evloop').replace('LSMGO_EVLOOP_','').rstrip('_')
        d[(name,p[2]+' '+p[3])].append((p[0],num(p[8]),p[11],num(p[14])))
for k in sorted(d):
    v=d[k]; ops=[x[1] for x in v]; cpu=[x[3] for x in v]
    print(f"{k[1]:9} {k[0]:28} ops/s med {statistics.median(ops)/1000:6.1f}k ({min(ops)/1000:.1f}-{max(ops)/1000:.1f}) cpu/op med {statistics.median(cpu):5.1f}us ({min(cpu)}-{max(cpu)})  p99 {' '.join(x[2] for x in v)}")
