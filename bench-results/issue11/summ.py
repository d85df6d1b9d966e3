import json, glob, os, re, collections
M='/tmp/meas11'
def load(p):
    try: return json.load(open(p))['results']
    except Exception: return None
def fmt_ops(x): return f"{x/1e3:.0f}k" if x>=1e4 else f"{x/1e3:.1f}k"
def fmt_t(ns):
    if ns>=1e6: return f"{ns/1e6:.1f}ms"
    if ns>=1e3: return f"{ns/1e3:.1f}µs"
    return f"{ns:.0f}ns"
def rng(vals,f):
    if not vals: return '-'
    a,b=min(vals),max(vals)
    return f(a) if f(a)==f(b) else f"{f(a)}–{f(b)}"
def rr(vals):
    if not vals: return '-'
    return ", ".join(f"{v:.2f}" for v in vals)
rounds=sorted({int(m.group(1)) for p in glob.glob(M+'/r*-*-engine/results.json') for m in [re.search(r'/r(\d+)-',p)]})
out=[]
# engine
E=collections.defaultdict(dict)  # (round) -> {(label,workload): row}
for r in rounds:
    if str(r) not in os.environ.get('ENG_ROUNDS','123'): continue
    for v in ('before','after'):
        res=load(f"{M}/r{r}-{v}-engine/results.json")
        if not res: continue
        for x in res:
            lab = f"lsmgo-{v}" if x['engine']=='lsmgo' else x['engine']
            E[r][(lab,x['workload'])]=x
done=[r for r in rounds if any(k[0]=='lsmgo-before' for k in E[r]) and any(k[0]=='lsmgo-after' for k in E[r])]
out.append(f"### Engine (--num=1000000, 1 thread unless noted; rounds with both sides: {done})\n")
out.append("| workload | engine | ops/s | p50 | p99 | cpu/op | peak RSS |")
out.append("|---|---|---:|---:|---:|---:|---:|")
wls=['fillrandom','readrandom','readwhilewriting','mixed','ycsb-c']
labs=['lsmgo-before','lsmgo-after','pebble','bbolt']
for w in wls:
    for l in labs:
        xs=[E[r][(l,w)] for r in done if (l,w) in E[r]]
        if not xs: continue
        out.append(f"| {w} | {l} | {rng([x['ops_per_sec'] for x in xs],fmt_ops)} | {rng([x['p50_ns'] for x in xs],fmt_t)} | {rng([x['p99_ns'] for x in xs],fmt_t)} | {rng([x['cpu_seconds']/x['ops']*1e9 for x in xs],fmt_t)} | {rng([x['peak_rss']/2**20 for x in xs],lambda v:f'{v:.0f}M')} |")
out.append("\nPer-round ratios (each list is round "+", ".join(map(str,done))+"): ops/s after/before, cpu/op after/before, ops/s lsmgo-after / best peer (pebble,bbolt, same run), cpu/op lsmgo-after / lowest peer\n")
out.append("| workload | ops after/before | cpu/op after/before | ops after/best peer (which) | cpu/op after/lowest peer |")
out.append("|---|---|---|---|---|")
for w in wls:
    a,c,p,q=[],[],[],[]; who=[]
    for r in done:
        A=E[r].get(('lsmgo-after',w)); B=E[r].get(('lsmgo-before',w))
        if A and B:
            a.append(A['ops_per_sec']/B['ops_per_sec']); c.append((A['cpu_seconds']/A['ops'])/(B['cpu_seconds']/B['ops']))
        peers=[E[r][(l,w)] for l in ('pebble','bbolt') if (l,w) in E[r]]
        if A and peers:
            bp=max(peers,key=lambda x:x['ops_per_sec']); p.append(A['ops_per_sec']/bp['ops_per_sec']); who.append(bp['engine'])
            lp=min(peers,key=lambda x:x['cpu_seconds']/x['ops']); q.append((A['cpu_seconds']/A['ops'])/(lp['cpu_seconds']/lp['ops']))
    out.append(f"| {w} | {rr(a)} | {rr(c)} | {rr(p)} ({','.join(who)}) | {rr(q)} |")
# server
S=collections.defaultdict(dict)
for p in glob.glob(M+'/r*-srv-*/results.json'):
    m=re.search(r'/r(\d+)-srv-(\w+)-c(\d+)-P(\d+)/',p); res=load(p)
    if not res: continue
    S[int(m.group(1))][(m.group(2),f"c{m.group(3)} P{m.group(4)}")]=res[0]
sr=sorted(r for r in S if len(S[r])==9 and str(r) in os.environ.get('SRV_ROUNDS','123'))
out.append(f"\n### Server (50:50 GET:SET, 32 B keys, 128 B values, 8 s each, appendfsync everysec; complete rounds: {sr}; cpu/op = server process utime+stime per op)\n")
out.append("| conns/pipeline | server | ops/s | p50 | p99 | server cpu/op | peak RSS |")
out.append("|---|---|---:|---:|---:|---:|---:|")
cfgs=['c50 P1','c512 P1','c50 P16']
for cf in cfgs:
    for s in ('redis','before','after'):
        xs=[S[r][(s,cf)] for r in sr]
        lab={'redis':'redis 7.0.15','before':'lsmgo-before','after':'lsmgo-after'}[s]
        out.append(f"| {cf} | {lab} | {rng([x['ops_per_sec'] for x in xs],fmt_ops)} | {rng([x['p50_ns'] for x in xs],fmt_t)} | {rng([x['p99_ns'] for x in xs],fmt_t)} | {rng([x['cpu_seconds']/x['ops']*1e9 for x in xs],fmt_t)} | {rng([x['peak_rss']/2**20 for x in xs],lambda v:f'{v:.0f}M')} |")
out.append("\nPer-round ratios (rounds "+", ".join(map(str,sr))+")\n")
out.append("| conns/pipeline | ops after/before | cpu/op after/before | ops after/redis | cpu/op after/redis | ops before/redis | cpu/op before/redis |")
out.append("|---|---|---|---|---|---|---|")
for cf in cfgs:
    cols=[[] for _ in range(6)]
    for r in sr:
        A,B,R=(S[r][(s,cf)] for s in ('after','before','redis'))
        co=lambda x:x['cpu_seconds']/x['ops']
        for i,(x,y,f) in enumerate([(A,B,'o'),(A,B,'c'),(A,R,'o'),(A,R,'c'),(B,R,'o'),(B,R,'c')]):
            cols[i].append(x['ops_per_sec']/y['ops_per_sec'] if f=='o' else co(x)/co(y))
    out.append(f"| {cf} | "+" | ".join(rr(c) for c in cols)+" |")
print("\n".join(out))
