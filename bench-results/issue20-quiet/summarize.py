#!/usr/bin/env python3
"""summarize.py: per round and workload, lsmgo main and this branch against
the issue's peer for that workload (Pebble for fillrandom, bbolt for the
reads), from run.sh's results.json files (rN-main, rN-branch, rN-pebble,
rN-bbolt). A round without its own bbolt run is compared with the bbolt
run nearest in time, marked *.

    python3 bench-results/issue20-quiet/summarize.py [DIR]
"""
import json
import os
import sys

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["fillrandom", "readrandom", "readwhilewriting"]
TARGET = {"fillrandom": "pebble", "readrandom": "bbolt", "readwhilewriting": "bbolt"}
ROUNDS = (1, 2, 3)


def results(name):
    path = os.path.join(HERE, name, "results.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        run = json.load(f)
    return {r["workload"]: r for r in run["results"] if not r.get("error")}


def cpu(x):
    return "%.1f" % (x["cpu_seconds"] / x["ops"] * 1e6) if x else "–"


def kops(x):
    return "%.1fk" % (x["ops_per_sec"] / 1e3) if x else "–"


runs = {(r, e): results("r%d-%s" % (r, e)) for r in ROUNDS for e in ("main", "branch", "pebble", "bbolt")}
bbolt_rounds = [r for r in ROUNDS if runs[(r, "bbolt")]]

print("| round | workload | main ops/s | branch ops/s | bbolt | pebble | branch ÷ main | main ÷ target peer | branch ÷ target peer | CPU/op main, branch, bbolt, pebble (µs) | peak RSS main, branch, bbolt, pebble (MiB) | writer ops/s main, branch, bbolt, pebble |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
for r in ROUNDS:
    own = runs[(r, "bbolt")]
    near = min(bbolt_rounds, key=lambda b: abs(b - r)) if bbolt_rounds else None
    bolt = own or (runs[(near, "bbolt")] if near else {})
    mark = "" if own else "*"
    for w in WORKLOADS:
        m, b = runs[(r, "main")].get(w), runs[(r, "branch")].get(w)
        bb, pb = bolt.get(w), runs[(r, "pebble")].get(w)
        if m is None and b is None:
            continue
        peer = {"bbolt": bb, "pebble": pb}[TARGET[w]]
        pm = mark if TARGET[w] == "bbolt" else ""

        def ratio(x):
            return "%.2f%s" % (x["ops_per_sec"] / peer["ops_per_sec"], pm) if x and peer else "–"
        rows = (m, b, bb, pb)
        print("| r%d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r, w, " | ".join((kops(m), kops(b), kops(bb) + (mark if bb else ""), kops(pb))),
            "%.2f" % (b["ops_per_sec"] / m["ops_per_sec"]) if m and b else "–", ratio(m), ratio(b),
            ", ".join(cpu(x) for x in rows),
            ", ".join("%.0f" % (x["peak_rss"] / 2**20) if x else "–" for x in rows),
            ", ".join("%.1fk" % (x["writer_ops_per_sec"] / 1e3) if x and x.get("writer_ops_per_sec") else "–" for x in rows)))
