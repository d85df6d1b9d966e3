#!/usr/bin/env python3
"""Summarizes cpu_ab.sh's CSV: per test, each build's server CPU per
request (µs, range over rounds) and requests/s, and B ÷ A per round."""
import collections, sys

rows = collections.defaultdict(dict)  # test -> {(round, who): (rps, cpu)}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) == 5 and f[3] and f[4]:
        rows[f[2]][(f[0], f[1])] = (float(f[3]), float(f[4]))
print("| test | A CPU/req µs | B CPU/req µs | B ÷ A CPU, per round | A req/s | B req/s |")
print("|---|---|---|---|---|---|")
for test, r in rows.items():
    rounds = sorted({n for n, _ in r if (n, "A") in r and (n, "B") in r})
    side = lambda w, i: [r[(n, w)][i] for n in rounds]
    rng = lambda v, f: f"{f(min(v))}–{f(max(v))}"
    us, k = (lambda x: f"{x:.1f}"), (lambda x: f"{x/1000:.0f}k")
    ratio = ", ".join(f"{r[(n, 'B')][1] / r[(n, 'A')][1]:.2f}" for n in rounds)
    print(f"| {test} | {rng(side('A', 1), us)} | {rng(side('B', 1), us)} | {ratio} | {rng(side('A', 0), k)} | {rng(side('B', 0), k)} |")
