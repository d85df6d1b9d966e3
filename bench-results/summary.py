#!/usr/bin/env python3
"""summary.py: the "Current standing" tables of BENCHMARKS.md, from the raw
files in bench-results/ (run from the repository root or anywhere:
paths are relative to this file).

    python3 bench-results/summary.py > /tmp/standing.md

Each table is computed from the newest raw files of its mode; the sources
are named in SOURCES and printed above each table, with the machine and
the dates the files record. Only the raw files are read: a section of
BENCHMARKS.md whose figures have no raw file here (the Intel VM's first
full run lists its results in the text only) cannot be regenerated and
is not used.
"""
import csv
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))

# The newest measurement of each mode with raw files, and where its log is.
SOURCES = {
    "engine": ("issue20-quiet", [1, 2, 3], "history/engine.md#issue-20-item-6-fourth-round-what-a-point-read-touches-and-a-slot"),
    "server": ("issue11", [4, 5], "issue11/SUMMARY.md"),
    "imgbed": (("imgbed/run1", "imgbed/run2-gets"), [1, 2, 3], "history/imgbed.md#results"),
}
ENGINE_WORKLOADS = ["fillrandom", "readrandom", "readwhilewriting", "ycsb-c"]
# The runs of round r under the engine source's directory: lsmgo as it
# stands after the round's change, and the peers (one run for all, or one
# run each). A peer a round did not run is taken from the nearest round
# that did, and the round's ratio is marked *.
ENGINE_RUNS = ["r%d-branch", "r%d-pebble", "r%d-bbolt"]
PEERS = ["pebble", "bbolt"]
SERVER_ROWS = [("c50-P1", "50 conns, -P 1"), ("c512-P1", "512 conns, -P 1"), ("c50-P16", "50 conns, -P 16")]


def load(path):
    with open(os.path.join(HERE, path)) as f:
        return json.load(f)


def kops(x):
    if x >= 10000:
        return "%.0fk" % (x / 1000)
    if x >= 1000:
        return "%.1fk" % (x / 1000)
    return "%.0f" % x


def us(seconds):
    return "%.1f µs" % (seconds * 1e6)


def ms(ns):
    return "%.1f ms" % (ns / 1e6)


def span(values, fmt):
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else lo + "–" + hi


def ratios(values):
    return ", ".join("%.2f" % v for v in values)


def day_and_times(starts):
    """2026-12-01 18:58–19:21 UTC from RFC 3339 start times."""
    starts = sorted(starts)
    day = starts[0][:10]
    return "%s %s–%s UTC (starts)" % (day, starts[0][11:16], starts[-1][11:16])


def machine(meta):
    return "%s, %d cores, %.1f GiB, kernel %s, %s" % (
        meta["cpu"], meta["cores"], meta["memory_bytes"] / 2**30, meta["kernel"], meta["go_version"])


def engine():
    d, rounds, log = SOURCES["engine"]
    files = [[load(p) for p in ("%s/%s/results.json" % (d, f % r) for f in ENGINE_RUNS)
              if os.path.exists(os.path.join(HERE, p))] for r in rounds]
    # Per round, the results of every engine the round ran.
    merged = [[res for run in fs for res in run["results"]] for fs in files]
    have = {e: [i for i, m in enumerate(merged) if any(x["engine"] == e for x in m)] for e in PEERS}
    borrowed = [False] * len(rounds)
    for i in range(len(rounds)):
        for p in PEERS:
            if i not in have[p] and have[p]:
                near = min(have[p], key=lambda j: abs(j - i))
                merged[i] += [x for x in merged[near] if x["engine"] == p]
                borrowed[i] = True
    starts = [run["meta"]["start"] for fs in files for run in fs]
    used = [f.replace("r%d-", "r*-") for f in ENGINE_RUNS
            if any(os.path.exists(os.path.join(HERE, d, f % r)) for r in rounds)]
    print("### Engine: lsmgo against Pebble and bbolt (`lsmgo-bench --mode=engine --num=1000000`)\n")
    print("%s; %s; rounds %s of `bench-results/%s/` (`%s/results.json`); "
          "log: [%s](bench-results/%s).\n" % (
              machine(files[0][0]["meta"]), day_and_times(starts), ", ".join(map(str, rounds)), d,
              used[0] if len(used) == 1 else "{" + ",".join(used) + "}", log.split("#")[0], log))
    print("| workload | lsmgo ops/s | pebble ops/s | bbolt ops/s | lsmgo ÷ best peer, per round | lsmgo CPU/op | pebble CPU/op | bbolt CPU/op |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for w in ENGINE_WORKLOADS:
        per = {}  # engine -> list of results, one per round
        for m in merged:
            for res in m:
                if res["workload"] == w and not res.get("error"):
                    per.setdefault(res["engine"], []).append(res)
        if "lsmgo" not in per:
            continue  # a workload these rounds did not run
        ops = {e: [r["ops_per_sec"] for r in per[e]] for e in per}
        cpu = {e: [r["cpu_seconds"] / r["ops"] for r in per[e]] for e in per}
        best = [ops["lsmgo"][i] / max(ops[p][i] for p in PEERS) for i in range(len(rounds))]
        marked = ", ".join("%.2f%s" % (v, "*" if b else "") for v, b in zip(best, borrowed))
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            w, span(ops["lsmgo"], kops), span(ops["pebble"], kops), span(ops["bbolt"], kops), marked,
            span(cpu["lsmgo"], us), span(cpu["pebble"], us), span(cpu["bbolt"], us)))
    print()


def server():
    d, rounds, log = SOURCES["server"]
    print("### Server: lsmgo serve against Redis 7 (`lsmgo-bench --mode=client`, 50:50 GET:SET, 32 B keys, 128 B values, 8 s, appendfsync everysec)\n")
    res, starts = {}, []
    for side in ("after", "redis"):
        for key, _ in SERVER_ROWS:
            for r in rounds:
                j = load("%s/r%d-srv-%s-%s/results.json" % (d, r, side, key))
                res[(side, key, r)] = j["results"][0]
                starts.append(j["meta"]["start"])
                meta = j["meta"]
    print("%s; %s; rounds %s of `bench-results/%s/` (`r*-srv-{after,redis}-*/results.json`, lsmgo at 1ac5b24, Redis 7.0.15); "
          "log: [%s](bench-results/%s).\n" % (
              machine(meta), day_and_times(starts), ", ".join(map(str, rounds)), d, log, log))
    print("| connections | Redis ops/s | lsmgo ops/s | lsmgo ÷ Redis, per round | Redis p99 | lsmgo p99 | Redis CPU/op | lsmgo CPU/op |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for key, label in SERVER_ROWS:
        def col(side, f):
            return [f(res[(side, key, r)]) for r in rounds]
        ops = lambda x: x["ops_per_sec"]
        p99 = lambda x: x["p99_ns"]
        cpu = lambda x: x["cpu_seconds"] / x["ops"]
        rr = [a / b for a, b in zip(col("after", ops), col("redis", ops))]
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, span(col("redis", ops), kops), span(col("after", ops), kops), ratios(rr),
            span(col("redis", p99), ms), span(col("after", p99), ms),
            span(col("redis", cpu), us), span(col("after", cpu), us)))
    print()


def imgbed():
    (uploads, gets), rounds, log = SOURCES["imgbed"]
    rows = []
    for d, want in ((uploads, "upload"), (gets, "get")):
        with open(os.path.join(HERE, d, "summary.tsv")) as f:
            rows += [r for r in csv.DictReader(f, delimiter="\t") if r["workload"] == want]
    with open(os.path.join(HERE, uploads, "machine.txt")) as f:
        m = dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)
    print("### Image host: lsmgo serve against a reference upload handler and nginx (~100 KB JPEG, loopback)\n")
    print("%s, kernel %s, %s, nginx %s; 2026-12-01 13:22–13:41 UTC (from the log: summary.tsv records no time); medians of rounds %s, ranges in parentheses; "
          "`bench-results/%s/summary.tsv` (uploads) and `bench-results/%s/summary.tsv` (GETs); log: [%s](bench-results/%s).\n" % (
              m["cpu"], m["kernel"], m["go"].replace("go version ", "").split(" ")[0], m["nginx"].split("/")[-1],
              ", ".join(map(str, rounds)), uploads, gets, log.split("#")[0], log))
    print("| row | peer req/s | lsmgo req/s | lsmgo ÷ peer, per round | peer CPU/req | lsmgo CPU/req |")
    print("|---|---:|---:|---|---:|---:|")
    tools = {"bench": "lsmgo-bench", "hey": "hey", "wrk": "wrk"}
    keys = []
    for r in rows:
        k = (r["tool"], r["workload"], r["conns"])
        if k not in keys:
            keys.append(k)
    for tool, workload, conns in keys:
        by = {}
        for r in rows:
            if (r["tool"], r["workload"], r["conns"]) == (tool, workload, conns):
                by.setdefault(r["server"], {})[int(r["round"])] = r
        peers = [s for s in by if s != "lsmgo"]
        if not peers:
            continue
        peer = peers[0]

        def med(server, field):
            vals = [float(by[server][n][field]) for n in rounds]
            return "%.0f (%.0f–%.0f)" % (statistics.median(vals), min(vals), max(vals))
        rr = [float(by["lsmgo"][n]["reqs_per_s"]) / float(by[peer][n]["reqs_per_s"]) for n in rounds]
        what = "upload, %s bytes" % ("unique" if tool == "bench" else "same") if workload == "upload" else "GET original"
        print("| %s, -c %s (%s) vs %s | %s | %s | %s | %s µs | %s µs |" % (
            what, conns, tools[tool], peer, med(peer, "reqs_per_s"), med("lsmgo", "reqs_per_s"), ratios(rr),
            med(peer, "server_cpu_us_per_req"), med("lsmgo", "server_cpu_us_per_req")))
    print()


if __name__ == "__main__":
    engine()
    server()
    imgbed()
