#!/usr/bin/env python3
"""Summarize bench-results/types/run.sh output: for each test and pipeline
depth, the median and range of requests/s and p99 for both servers, and
lsmgo/redis ratios computed round by round (each round ran both).

Usage: bench-results/types/summary.py OUTDIR
"""
import csv
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
# rps[(test, P)][server][round] = (rps, p99)
data = defaultdict(lambda: defaultdict(dict))
for path in glob.glob(os.path.join(out, "*-r*-P*.csv")):
    m = re.match(r"(\w+)-r(\d+)-P(\d+)\.csv$", os.path.basename(path))
    server, rnd, p = m.group(1), int(m.group(2)), int(m.group(3))
    with open(path) as f:
        for row in csv.DictReader(f):
            test = row["test"].split(" ")[0]
            data[(test, p)][server][rnd] = (float(row["rps"]), float(row["p99_latency_ms"]))


def fmt(vals):
    return "%.0fk (%.0f–%.0fk)" % (statistics.median(vals) / 1e3, min(vals) / 1e3, max(vals) / 1e3)


print("| test | -P | redis req/s | lsmgo req/s | lsmgo/redis per round | p99 ms redis / lsmgo (median) |")
print("|---|---|---|---|---|---|")
for (test, p) in sorted(data, key=lambda k: (k[1], k[0])):
    d = data[(test, p)]
    rounds = sorted(set(d["redis"]) & set(d["lsmgo"]))
    if not rounds:
        continue
    ratios = [d["lsmgo"][r][0] / d["redis"][r][0] for r in rounds]
    print("| %s | %d | %s | %s | %.2f–%.2f | %.2f / %.2f |" % (
        test, p, fmt([d["redis"][r][0] for r in rounds]), fmt([d["lsmgo"][r][0] for r in rounds]),
        min(ratios), max(ratios),
        statistics.median(d["redis"][r][1] for r in rounds), statistics.median(d["lsmgo"][r][1] for r in rounds)))
