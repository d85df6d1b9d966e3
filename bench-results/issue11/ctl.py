import json,sys
M='/tmp/meas11'
pre=sys.argv[1]; wls=sys.argv[2].split(',')
print("| workload | thr | round | side | ops/s | p50 | p99 | cpu/op | peak RSS |\n|---|---|---|---|---:|---:|---:|---:|---:|")
rows=[]
for r in (1,2):
  for v in ('before','after'):
    for x in json.load(open(f"{M}/{pre}{r}-{v}-engine/results.json"))['results']:
      rows.append((x['workload'],x['threads'],r,v,x))
for w in wls:
  for (ww,t,r,v,x) in rows:
    if ww!=w: continue
    print(f"| {w} | {t} | {r} | {v} | {x['ops_per_sec']/1e3:.0f}k | {x['p50_ns']/1e3:.2f}µs | {x['p99_ns']/1e3:.1f}µs | {x['cpu_seconds']/x['ops']*1e6:.2f}µs | {x['peak_rss']/2**20:.0f}M |")
