#!/usr/bin/env python3
"""Summarize run.sh's CSVs (summary.py A.csv [B.csv ...]): per test and
P, ranges over all rounds of server CPU per request (A = main, B =
branch, redis), of B's CPU over A's in the same round, and of req/s over
Redis' in the same round."""
import csv, sys
from collections import defaultdict

rows = defaultdict(dict)  # (test, P) -> round -> who -> row
for i, path in enumerate(sys.argv[1:]):
    for r in csv.DictReader(open(path)):
        rows[(r["test"], int(r["P"]))].setdefault((i, r["round"]), {})[r["who"]] = r

def rng(xs, f="{:.2f}"):
    return f.format(min(xs)) + "–" + f.format(max(xs))

print("| test | P | CPU µs/req main / branch / Redis | branch ÷ main CPU | req/s ÷ Redis main / branch |")
print("|---|---|---|---|---|")
for (test, p), rounds in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    cpu = {w: [float(rd[w]["cpu_us_per_req"]) for rd in rounds.values()] for w in ("A", "B", "redis")}
    ba = [float(rd["B"]["cpu_us_per_req"]) / float(rd["A"]["cpu_us_per_req"]) for rd in rounds.values()]
    ar = [float(rd["A"]["rps"]) / float(rd["redis"]["rps"]) for rd in rounds.values()]
    br = [float(rd["B"]["rps"]) / float(rd["redis"]["rps"]) for rd in rounds.values()]
    print(f"| {test.upper()} | {p} | {rng(cpu['A'], '{:.1f}')} / {rng(cpu['B'], '{:.1f}')} / {rng(cpu['redis'], '{:.1f}')} | {rng(ba)} | {rng(ar)} / {rng(br)} |")
