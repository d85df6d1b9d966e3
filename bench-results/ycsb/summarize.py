#!/usr/bin/env python3
"""Summarize an lsmgo-bench results.json of YCSB workloads.

Prints, per workload: each engine's median ops/s with the min-max over the
runs, p50/p99 and CPU per op of the median run; then lsmgo against the best
peer, as ratios taken within each run (same run, same machine state) and
given as a range over runs: ops/s against the fastest peer of each run,
CPU per operation against the peer that spent the least per operation in
that run.

    python3 summarize.py results.json
"""
import json
import statistics
import sys
from collections import defaultdict


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def fmt_rate(x):
    return f"{x / 1e3:.1f}k" if x >= 1e3 else f"{x:.0f}"


def main(path):
    rep = json.load(open(path))
    rows = [r for r in rep["results"] if not r.get("error") and r["workload"].startswith("ycsb-")]
    by = defaultdict(list)  # (workload, engine) -> rows
    for r in rows:
        by[(r["workload"], r["engine"])].append(r)
    workloads = sorted({r["workload"] for r in rows})
    engines = [e for e in rep["config"]["engines"] if any(k[1] == e for k in by)]
    cpu = lambda r: r["cpu_seconds"] * 1e9 / r["ops"] if r["ops"] else 0
    print("| workload | engine | ops/s median (min–max) | p50 | p99 | cpu/op |")
    print("|---|---|---|---|---|---|")
    for w in workloads:
        for e in engines:
            rs = sorted(by[(w, e)], key=lambda r: r["ops_per_sec"])
            if not rs:
                continue
            m = rs[(len(rs) - 1) // 2]
            print(f"| {w} | {e} | {fmt_rate(m['ops_per_sec'])} ({fmt_rate(rs[0]['ops_per_sec'])}–{fmt_rate(rs[-1]['ops_per_sec'])}) "
                  f"| {fmt_ns(m['p50_ns'])} | {fmt_ns(m['p99_ns'])} | {fmt_ns(cpu(m))} |")
    print()
    print("| workload | best peer (by median ops/s) | lsmgo / best peer, ops/s (per run) | cheapest peer's cpu/op ÷ lsmgo's (per run; which peer) | p99 lsmgo vs peer (median runs) |")
    print("|---|---|---|---|---|")
    for w in workloads:
        med = {}
        for e in engines:
            rs = by[(w, e)]
            if rs:
                med[e] = statistics.median_low(sorted(r["ops_per_sec"] for r in rs))
        peers = {e: v for e, v in med.items() if e != "lsmgo"}
        if "lsmgo" not in med or not peers:
            continue
        best = max(peers, key=peers.get)
        ratios, cpus, cheapest = [], [], set()
        runs = sorted({r["run"] for r in by[(w, "lsmgo")]})
        for run in runs:
            mine = [r for r in by[(w, "lsmgo")] if r["run"] == run]
            theirs = [r for e in peers for r in by[(w, e)] if r["run"] == run]
            if not mine or not theirs:
                continue
            top = max(theirs, key=lambda r: r["ops_per_sec"])
            ratios.append(mine[0]["ops_per_sec"] / top["ops_per_sec"])
            thrifty = min(theirs, key=cpu)
            if cpu(mine[0]):
                cpus.append(cpu(thrifty) / cpu(mine[0]))
                cheapest.add(thrifty["engine"])
        pick = lambda e: sorted(by[(w, e)], key=lambda r: r["ops_per_sec"])[(len(by[(w, e)]) - 1) // 2]
        rng = lambda xs: f"{min(xs):.2f}–{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"
        print(f"| {w} | {best} | {rng(ratios)} | {rng(cpus) if cpus else '-'} ({', '.join(sorted(cheapest))}) | "
              f"{fmt_ns(pick('lsmgo')['p99_ns'])} vs {fmt_ns(pick(best)['p99_ns'])} |")


if __name__ == "__main__":
    main(sys.argv[1])
