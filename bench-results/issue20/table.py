#!/usr/bin/env python3
"""Summarizes table.sh's CSV: per test and pipeline depth, lsmgo ÷ Redis
requests/s per round (range), each server's CPU per request (µs, range)
and p99 (ms, range). With --short, one row per test: the ratios and CPU
per request at -P 1 and -P 16 (BENCHMARKS.md's table)."""
import collections, sys

short = "--short" in sys.argv
sys.argv = [a for a in sys.argv if a != "--short"]

rows = collections.defaultdict(dict)  # (test, P) -> {(round, who): (rps, p99, cpu)}
order = []
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) != 13 or not f[5] or not f[12]:
        continue
    key = (f[4], f[3])
    if key not in rows:
        order.append(key)
    rows[key][(f[0], f[1])] = (float(f[5]), float(f[10]), float(f[12]))
rng = lambda v, f: f"{f(min(v))}–{f(max(v))}" if min(v) != max(v) else f(v[0])


def stats(r):
    """Per round lsmgo ÷ Redis req/s, and each side's CPU/request and p99."""
    rounds = sorted({n for n, _ in r if (n, "lsmgo") in r and (n, "redis") in r})
    side = lambda w, i: [r[(n, w)][i] for n in rounds]
    ratio = [r[(n, "lsmgo")][0] / r[(n, "redis")][0] for n in rounds]
    return rounds, side, ratio


if short:
    print("| test | -P 1 req/s ratio | -P 1 CPU µs/req lsmgo / Redis | -P 16 req/s ratio | -P 16 CPU µs/req lsmgo / Redis |")
    print("|---|---|---|---|---|")
    for test in dict.fromkeys(t for t, _ in order):
        cells = []
        for P in ("P1", "P16"):
            rounds, side, ratio = stats(rows.get((test, P), {}))
            if not rounds:
                cells += ["–", "–"]
                continue
            us = lambda x: f"{x:.1f}"
            cells += [rng(ratio, lambda x: f"{x:.2f}"), f"{rng(side('lsmgo', 2), us)} / {rng(side('redis', 2), us)}"]
        print(f"| {test.split(' (')[0]} | " + " | ".join(cells) + " |")
    sys.exit()
for P in ("P1", "P16"):
    print(f"\n-{P[0]} {P[1:]}\n")
    print("| test | req/s ratio | lsmgo req/s | Redis req/s | CPU/req µs lsmgo | CPU/req µs Redis | p99 ms lsmgo | p99 ms Redis |")
    print("|---|---|---|---|---|---|---|---|")
    for test, p in order:
        if p != P:
            continue
        rounds, side, ratio = stats(rows[(test, p)])
        if not rounds:
            continue
        k = lambda x: f"{x/1000:.1f}k"
        us = lambda x: f"{x:.1f}"
        ms = lambda x: f"{x:.1f}"
        print(f"| {test} | {rng(ratio, lambda x: f'{x:.2f}')} | {rng(side('lsmgo', 0), k)} | {rng(side('redis', 0), k)} | "
              f"{rng(side('lsmgo', 2), us)} | {rng(side('redis', 2), us)} | {rng(side('lsmgo', 1), ms)} | {rng(side('redis', 1), ms)} |")
