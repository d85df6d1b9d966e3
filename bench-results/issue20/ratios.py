#!/usr/bin/env python3
"""Prints, from bench.sh's CSV, one row per test and pipeline depth: each
side's requests/s (median and range over rounds), lsmgo ÷ Redis per
round and as a range, and each side's median p99 (ms)."""
import collections, statistics, sys

rate = collections.defaultdict(dict)  # (test, P) -> {(round, who): (rps, p99)}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) < 11:
        continue
    rnd, who, p, test = f[:4]
    name = "LPUSH (before LRANGE)" if "needed" in test else test.split(" (")[0]
    rate[(name, p)][(rnd, who)] = (float(f[4]), float(f[9]))


def k(v):
    return f"{v/1000:.1f}k"


print("| test | P | lsmgo req/s | Redis req/s | lsmgo ÷ Redis, per round | range | p99 ms lsmgo / Redis |")
print("|---|---|---|---|---|---|---|")
for (test, p), r in rate.items():
    rounds = sorted({n for n, _ in r})
    both = [n for n in rounds if (n, "lsmgo") in r and (n, "redis") in r]
    if not both:
        continue
    ratios = [r[(n, "lsmgo")][0] / r[(n, "redis")][0] for n in both]
    side = lambda who, i: [r[(n, who)][i] for n in both]
    rng = lambda v: f"{k(statistics.median(v))} ({k(min(v))}–{k(max(v))})"
    print(f"| {test} | {p[1:]} | {rng(side('lsmgo', 0))} | {rng(side('redis', 0))} | "
          f"{', '.join(f'{x:.2f}' for x in ratios)} | {min(ratios):.2f}–{max(ratios):.2f} | "
          f"{statistics.median(side('lsmgo', 1)):.1f} / {statistics.median(side('redis', 1)):.1f} |")
