#!/usr/bin/env python3
"""summarize.py: per round and workload, lsmgo main and this branch against
the issue's peer for that workload (Pebble for fillrandom, bbolt for the
reads), from run.sh's results.json files.

    python3 bench-results/issue20-mapped/summarize.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["fillrandom", "readrandom", "readwhilewriting"]
TARGET = {"fillrandom": "pebble", "readrandom": "bbolt", "readwhilewriting": "bbolt"}


def results(name):
    path = os.path.join(HERE, name, "results.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        run = json.load(f)
    return {(r["engine"], r["workload"]): r for r in run["results"] if not r.get("error")}


def cpu(x):
    return "%.1f" % (x["cpu_seconds"] / x["ops"] * 1e6) if x else "–"


print("| round | workload | main ops/s | branch ops/s | bbolt | pebble | branch ÷ main | main ÷ target peer | branch ÷ target peer | CPU/op main, branch, bbolt, pebble (µs) | peak RSS main, branch, bbolt, pebble (MiB) | writer ops/s main, branch, bbolt, pebble |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
for r in (1, 2, 3):
    main, branch = results("r%d-main" % r), results("r%d-branch" % r)
    for w in WORKLOADS:
        m, b = main.get(("lsmgo", w)), branch.get(("lsmgo", w))
        bb, pb = branch.get(("bbolt", w)), branch.get(("pebble", w))
        if m is None or b is None:
            continue
        rows = (m, b, bb, pb)
        peer = {"bbolt": bb, "pebble": pb}[TARGET[w]]
        ratio = lambda x: "%.2f" % (x["ops_per_sec"] / peer["ops_per_sec"]) if peer else "–"
        print("| r%d | %s | %s | %.2f | %s | %s | %s | %s | %s |" % (
            r, w, " | ".join("%.1fk" % (x["ops_per_sec"] / 1e3) if x else "–" for x in rows),
            b["ops_per_sec"] / m["ops_per_sec"], ratio(m), ratio(b),
            ", ".join(cpu(x) for x in rows),
            ", ".join("%.0f" % (x["peak_rss"] / 2**20) if x else "–" for x in rows),
            ", ".join("%.1fk" % (x.get("writer_ops_per_sec", 0) / 1e3) if x and x.get("writer_ops_per_sec") else "–" for x in rows)))
