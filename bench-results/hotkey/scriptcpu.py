"""Summarizes scriptcpu.sh's CSV: per test and depth, lsmgo ÷ Redis
req/s per round for each build, p99 and server CPU per request (medians
over rounds), and txbench's EVALSHA ÷ MULTI/EXEC per server and round.
Usage: python3 scriptcpu.py scriptcpu.csv"""
import collections
import re
import statistics
import sys

rows = collections.defaultdict(dict)  # (test, P) -> {(round, who): row}
tx = collections.defaultdict(dict)  # who -> {(round, mode): rps}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if f[2] == "txbench":
        m = re.match(r"(\S+): (\d+) requests per second", f[3])
        tx[f[1]][(int(f[0]), m.group(1))] = float(m.group(2))
        continue
    if len(f) < 12:
        continue
    rnd, who, test, P = int(f[0]), f[1], f[2], f[3]
    rows[(test, P)][(rnd, who)] = dict(rps=float(f[4]), p99=float(f[9]), cpu=float(f[11]))

med = statistics.median
print("| test | P | lsmgo÷Redis per round before / after | p99 ms before / after / Redis | CPU µs/req before / after / Redis |")
print("|---|---|---|---|---|")
for (test, P), r in sorted(rows.items(), key=lambda kv: (kv[0][1] != "P1", kv[0][0])):
    rounds = sorted({k[0] for k in r})
    def ratios(who):
        return ", ".join(f"{r[(n, who)]['rps'] / r[(n, 'redis')]['rps']:.2f}" for n in rounds
                         if (n, who) in r and (n, "redis") in r)
    def m(who, field, fmt):
        return fmt % med(r[(n, who)][field] for n in rounds if (n, who) in r)
    print(f"| {test.upper()} | {P[1:]} | {ratios('before')} / {ratios('after')} | "
          f"{m('before', 'p99', '%.1f')} / {m('after', 'p99', '%.1f')} / {m('redis', 'p99', '%.1f')} | "
          f"{m('before', 'cpu', '%.1f')} / {m('after', 'cpu', '%.1f')} / {m('redis', 'cpu', '%.1f')} |")
print()
print("| txbench (c50, one key) | EVALSHA ÷ MULTI/EXEC per round | EVALSHA req/s |")
print("|---|---|---|")
for who in ("before", "after", "redis"):
    t = tx[who]
    rounds = sorted({k[0] for k in t})
    print(f"| {who} | " + ", ".join(f"{t[(n, 'evalsha')] / t[(n, 'multi/exec')]:.2f}" for n in rounds)
          + " | " + ", ".join(f"{t[(n, 'evalsha')] / 1000:.1f}k" for n in rounds) + " |")
