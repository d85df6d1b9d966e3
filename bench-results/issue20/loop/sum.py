# Summary of a loop_ab.sh CSV: per test and P, the ranges of server CPU
# per request of A, B and Redis, B/A and B/Redis per round, and the
# per-batch reads, context switches and nanosleeps.
#   python3 sum.py OUT.csv
import csv,sys,collections
rows=list(csv.DictReader(open(sys.argv[1])))
d=collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    d[(r['test'],r['P'])][r['who']].append(r)
print("test P | cpu A | cpu B | cpu redis | B/A per round | B/redis | reads B/A | cs A | cs B | nanosleep A/B")
for k in d:
    g=d[k]
    def f(w,c='cpu_us_per_req'): return [float(x[c]) for x in g.get(w,[])]
    A,B,R=f('A'),f('B'),f('redis')
    rng=lambda v: "%.1f-%.1f"%(min(v),max(v)) if v else "-"
    ba=[b/a for a,b in zip(A,B)]; br=[b/r for b,r in zip(B,R)]
    print(k, rng(A), rng(B), rng(R), " ".join("%.2f"%x for x in ba), " ".join("%.2f"%x for x in br),
      rng(f('A','reads_per_batch')), rng(f('B','reads_per_batch')), rng(f('A','cs_per_batch')), rng(f('B','cs_per_batch')), rng(f('A','nanosleep_per_batch')), rng(f('B','nanosleep_per_batch')))
