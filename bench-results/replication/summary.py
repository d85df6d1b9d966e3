#!/usr/bin/env python3
"""Markdown tables from one run of bench-results/replication/run.sh.

Usage: [N=100000] summary.py OUTDIR   (N as given to run.sh)

Throughput: per server, pipeline depth and command, the median (and
min-max over rounds) of requests/s without replicas and with two, and the
ratio with/without taken round by round (the two runs of a round are
next to each other). Lag: median and range over rounds of each run's p50
and p99 over both replicas. Full sync: the CSV rows as a table.
"""
import csv
import glob
import os
import re
import statistics
import sys

out = sys.argv[1]


def rps(path):
    with open(path) as f:
        return {row[0]: float(row[1]) for row in csv.reader(f)
                if len(row) > 1 and row[0] in ("SET", "LPUSH", "HSET", "primary_cpu_s", "replicas_cpu_s")}


def span(xs, fmt):
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}–{fmt(max(xs))})"


def k(x):
    return f"{x / 1000:.1f}k"


def r2(x):
    return f"{x:.2f}"


runs = {}
for p in glob.glob(os.path.join(out, "*-round*.csv")):
    m = re.match(r"([\w-]+)-r(\d)-P(\d+)-round(\d+)\.csv", os.path.basename(p))
    server, reps, depth, rnd = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    runs[(server, reps, depth, rnd)] = rps(p)

rounds = sorted({key[3] for key in runs})
servers = [s for s in ("lsmgo", "lsmgo-old", "redis") if any(key[0] == s for key in runs)]
print(f"Throughput, requests/s (median, min–max over {len(rounds)} rounds)\n")
print("| server | -P | command | no replicas | 2 replicas | ratio with/without |")
print("|---|---|---|---|---|---|")
for server in servers:
    for depth in (1, 16):
        for cmd in ("SET", "LPUSH", "HSET"):
            without, with_, ratio = [], [], []
            for r in rounds:
                a = runs.get((server, 0, depth, r), {}).get(cmd)
                b = runs.get((server, 2, depth, r), {}).get(cmd)
                if a and b:
                    without.append(a)
                    with_.append(b)
                    ratio.append(b / a)
            if ratio:
                print(f"| {server} | {depth} | {cmd} | {span(without, k)} | {span(with_, k)} | {span(ratio, r2)} |")

requests = 3 * int(os.environ.get("N", "100000"))
print("\nPrimary CPU per request, µs (user+system, all three commands;"
      " median, min–max over rounds)\n")
print("| server | -P | no replicas | 2 replicas | ratio |")
print("|---|---|---|---|---|")
for server in servers:
    for depth in (1, 16):
        without, with_, ratio = [], [], []
        for r in rounds:
            a = runs.get((server, 0, depth, r), {}).get("primary_cpu_s")
            b = runs.get((server, 2, depth, r), {}).get("primary_cpu_s")
            if a and b:
                without.append(a / requests * 1e6)
                with_.append(b / requests * 1e6)
                ratio.append(b / a)
        if ratio:
            print(f"| {server} | {depth} | {span(without, r2)} | {span(with_, r2)} | {span(ratio, r2)} |")

print("\nBoth replicas' CPU per request of the primary, µs (user+system;"
      " median, min–max over rounds), and as a share of the primary's\n")
print("| server | -P | 2 replicas | ÷ primary |")
print("|---|---|---|---|")
for server in servers:
    for depth in (1, 16):
        per, share = [], []
        for r in rounds:
            run = runs.get((server, 2, depth, r), {})
            if run.get("replicas_cpu_s") and run.get("primary_cpu_s"):
                per.append(run["replicas_cpu_s"] / requests * 1e6)
                share.append(run["replicas_cpu_s"] / run["primary_cpu_s"])
        if per:
            print(f"| {server} | {depth} | {span(per, r2)} | {span(share, r2)} |")

print("\nReplication lag under that load, ms from the primary's +OK to the value"
      " on a replica (median, min–max over rounds of each run's percentile)\n")
print("| server | -P | probes | p50 | p99 | max |")
print("|---|---|---|---|---|---|")
for server in servers:
    for depth in (1, 16):
        p50, p99, mx, count = [], [], [], 0
        for p in glob.glob(os.path.join(out, f"{server}-r2-P{depth}-round*.lag")):
            with open(p) as f:
                for line in f:
                    if line.startswith("all "):
                        kv = dict(x.split("=") for x in line.split()[1:])
                        count += int(kv["count"])
                        if int(kv["count"]):
                            p50.append(float(kv["p50_ms"]))
                            p99.append(float(kv["p99_ms"]))
                            mx.append(float(kv["max_ms"]))
        if p50:
            print(f"| {server} | {depth} | {count} | {span(p50, r2)} | {span(p99, r2)} | {max(mx):.1f} |")

rows = []
for p in sorted(glob.glob(os.path.join(out, "fullsync-*.csv"))):
    with open(p) as f:
        rows += list(csv.DictReader(f))
if rows:
    print("\nFull sync of a new replica vs cp -r (+ sync) of the primary's data directory\n")
    print("| server | primary dir MB | cp -r s | cp MB/s | full sync s | sync MB/s | sync/cp |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        mb = int(row["primary_dir_bytes"]) / 1e6
        cp, sy = float(row["cp_s"]), float(row["sync_s"])
        print(f"| {row['server']} | {mb:.0f} | {cp:.2f} | {mb / cp:.0f} | {sy:.2f} | {mb / sy:.0f} | {cp / sy:.2f}× |")
