#!/usr/bin/env python3
# Ratios lsmgo / Redis per test from bench.sh output files, per round,
# with the median and the ranges of rates and p99 (ms).
#   python3 bench-results/hotkey/ratios.py before.txt after.txt ...
import sys, re, statistics
for f in sys.argv[1:]:
    rows={}
    for line in open(f):
        parts=line.strip().split(',')
        rnd, who, P = parts[0], parts[1], parts[2]
        if P=='txbench':
            m=re.match(r'(\S+): (\d+) requests per second, p99=([\d.]+)', ','.join(parts[3:]))
            test='tx '+m.group(1); rps=float(m.group(2)); p99=float(m.group(3))
        else:
            test=parts[3].split()[0]+' '+P; rps=float(parts[4]); p99=float(parts[8])
        rows.setdefault(test,{}).setdefault(rnd,{})[who]=(rps,p99)
    print(f)
    for test,r in rows.items():
        ratios=[]; ls=[]; rs=[]; lp=[]; rp=[]
        for rnd in sorted(r):
            if 'lsmgo' in r[rnd] and 'redis' in r[rnd]:
                ratios.append(r[rnd]['lsmgo'][0]/r[rnd]['redis'][0]); ls.append(r[rnd]['lsmgo'][0]); rs.append(r[rnd]['redis'][0]); lp.append(r[rnd]['lsmgo'][1]); rp.append(r[rnd]['redis'][1])
        print(f"  {test:14s} lsmgo {min(ls)/1e3:.1f}k-{max(ls)/1e3:.1f}k redis {min(rs)/1e3:.1f}k-{max(rs)/1e3:.1f}k ratio {' '.join('%.2f'%x for x in ratios)} (median {statistics.median(ratios):.2f}) p99 lsmgo {min(lp):.1f}-{max(lp):.1f} redis {min(rp):.1f}-{max(rp):.1f} ms")
