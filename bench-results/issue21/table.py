#!/usr/bin/env python3
"""Summarize table.sh's CSV: per workload and depth, lsmgo's and Redis'
rate (median and range over the rounds), lsmgo/Redis per round, p99 and
server CPU per request (medians). python3 table.py OUT.csv"""
import csv, statistics, sys
from collections import defaultdict

rows = defaultdict(dict)  # (name, P) -> {(round, who): (rps, p99, cpu_us)}
for f in csv.reader(open(sys.argv[1])):
    rnd, who, name, P, n, ticks = f[:6]
    rest = f[6:]
    if not rest or not rest[-1]:
        continue
    if rest[1].endswith(" req"):  # load21: mode, N req, X req/s, p50 a ms, p99 b ms
        reqs = int(rest[1].split()[0])
        rps = float(rest[2].split()[0])
        p99 = float(rest[4].split()[1])
    else:  # redis-benchmark --csv: test, rps, avg, min, p50, p95, p99, max
        reqs = int(n)
        rps, p99 = float(rest[1]), float(rest[6])
    cpu_us = int(ticks) * 10_000 / reqs  # ticks are 10 ms
    rows[(name, P)][(rnd, who)] = (rps, p99, cpu_us)

def k(x):
    return f"{x/1000:.1f}k"

order = ["xadd", "xpair", "setbit", "getbit", "pfadd", "pfcount", "geoadd", "geosearch"]
print("| workload | P | lsmgo req/s median (range) | Redis req/s median (range) | lsmgo/Redis per round | p99 ms lsmgo / Redis (medians) | server CPU µs/req lsmgo / Redis (medians) |")
print("|---|---|---|---|---|---|---|")
for P in ("P1", "P16"):
    for name in order:
        r = rows.get((name, P))
        if not r:
            continue
        rounds = sorted({rnd for rnd, _ in r})
        def col(who, i):
            return [r[(x, who)][i] for x in rounds if (x, who) in r]
        ratios = [f"{r[(x,'lsmgo')][0]/r[(x,'redis')][0]:.2f}" if (x, 'lsmgo') in r and (x, 'redis') in r else "-" for x in rounds]
        l, rd = col("lsmgo", 0), col("redis", 0)
        print(f"| {name} | {P} | {k(statistics.median(l))} ({k(min(l))}–{k(max(l))}) | {k(statistics.median(rd))} ({k(min(rd))}–{k(max(rd))}) | "
              f"{', '.join(ratios)} | {statistics.median(col('lsmgo',1)):.1f} / {statistics.median(col('redis',1)):.1f} | "
              f"{statistics.median(col('lsmgo',2)):.1f} / {statistics.median(col('redis',2)):.1f} |")
