#!/usr/bin/env python3
"""summarize.py: per round and workload, lsmgo before (main) and after
(the branch) against bbolt and Pebble, from run.sh's results.json files.

    python3 bench-results/issue20-engine/summarize.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["fillrandom", "readrandom", "readwhilewriting", "ycsb-c"]


def number(field):
    """22k -> 22000, 5.27µs -> 5.27e-6, 92.9M -> 92.9 * 2**20."""
    scale = {"k": 1e3, "M": 2**20, "µs": 1e-6, "ms": 1e-3}
    for suffix, factor in scale.items():
        if field.endswith(suffix):
            return float(field[:-len(suffix)]) * factor
    return float(field)


def results(name):
    """The rows of one invocation: from results.json, or, for a run that
    timeout cut short before writing it, from the table rows in its
    stdout.txt (ops/s and CPU/op rounded as printed)."""
    path = os.path.join(HERE, name, "results.json")
    if os.path.exists(path):
        with open(path) as f:
            run = json.load(f)
        return {(r["engine"], r["workload"]): r for r in run["results"]}
    rows = {}
    with open(os.path.join(HERE, name, "stdout.txt")) as f:
        for line in f:
            col = line.split()
            if len(col) >= 15 and col[0] in WORKLOADS and col[1] in ("lsmgo", "bbolt", "pebble"):
                rows[(col[1], col[0])] = {"ops_per_sec": number(col[3]), "cpu_seconds": number(col[9]), "ops": 1,
                                          "peak_rss": number(col[14])}
    return rows


print("| round | workload | lsmgo main ops/s | lsmgo branch ops/s | bbolt | pebble | branch ÷ main | main ÷ best peer | branch ÷ best peer | CPU/op main, branch, bbolt, pebble (µs) | peak RSS main, branch, bbolt, pebble (MiB) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
for r in (1, 2, 3):
    before, after = results("r%d-before" % r), results("r%d-after" % r)
    for w in WORKLOADS:
        m, b = before.get(("lsmgo", w)), after.get(("lsmgo", w))
        bb, pb = after.get(("bbolt", w)), after.get(("pebble", w))
        if m is None or b is None:
            continue
        rows = (m, b, bb, pb)
        best = max(x["ops_per_sec"] for x in (bb, pb) if x)
        print("| r%d | %s | %s | %.2f | %.2f | %.2f | %s | %s |" % (
            r, w, " | ".join("%.1fk" % (x["ops_per_sec"] / 1e3) if x else "–" for x in rows),
            b["ops_per_sec"] / m["ops_per_sec"], m["ops_per_sec"] / best, b["ops_per_sec"] / best,
            ", ".join("%.1f" % (x["cpu_seconds"] / x["ops"] * 1e6) if x else "–" for x in rows),
            ", ".join("%.0f" % (x["peak_rss"] / 2**20) if x else "–" for x in rows)))
