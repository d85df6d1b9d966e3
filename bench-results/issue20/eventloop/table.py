# Markdown table of loop_ab.sh CSVs (merged): per test and P, ranges over
# rounds of server CPU µs per request (main A, event loop B, Redis), B ÷ A
# and B ÷ Redis per round, requests/s, and reads and context switches
# per batch.
# --short: CPU only, one row per test (BENCHMARKS.md).
#   python3 table.py [--short] ab-*.csv
import csv, sys, collections, statistics
short = sys.argv[1] == "--short"
rows = [r for f in sys.argv[1 + short:] for r in csv.DictReader(open(f))]
d = collections.defaultdict(dict)  # (test, P) -> (round, who) -> row
for r in rows:
    d[(r['test'].split()[0], int(r['P']))][(int(r['round']), r['who'])] = r
def rng(v, fmt="%.1f"):
    return (fmt + "–" + fmt) % (min(v), max(v)) if v else "-"
if not short:
  print("| test | -P | rounds | CPU µs/req main | event loop | Redis | loop ÷ main (median) | loop ÷ Redis | req/s main | event loop | Redis | reads/batch main, loop | ctx switches/batch main, loop, Redis |")
  print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
cells = collections.defaultdict(list)
for (t, p) in sorted(d, key=lambda k: (["get", "set", "lpush", "hset"].index(k[0]) if k[0] in ["get", "set", "lpush", "hset"] else 9, k[1])):
    g = d[(t, p)]
    rounds = sorted({r for r, _ in g})
    def col(w, c='cpu_us_per_req'):
        return [float(g[(r, w)][c]) for r in rounds if (r, w) in g and g[(r, w)][c] not in ('', None)]
    ba = [float(g[(r, 'B')]['cpu_us_per_req']) / float(g[(r, 'A')]['cpu_us_per_req']) for r in rounds if (r, 'A') in g and (r, 'B') in g]
    br = [float(g[(r, 'B')]['cpu_us_per_req']) / float(g[(r, 'redis')]['cpu_us_per_req']) for r in rounds if (r, 'redis') in g and (r, 'B') in g]
    rps = lambda w: rng([x / 1000 for x in col(w, 'rps')], "%.0fk")
    cells[t].append(f"{rng(col('A'))} / {rng(col('B'))} / {rng(col('redis'))} | {rng(ba, '%.2f')} ({statistics.median(ba):.2f})")
    if short:
        continue
    print(f"| {t.upper()} | {p} | {len(rounds)} | {rng(col('A'))} | {rng(col('B'))} | {rng(col('redis'))} | {rng(ba, '%.2f')} ({statistics.median(ba):.2f}) | {rng(br, '%.2f')} "
          f"| {rps('A')} | {rps('B')} | {rps('redis')} | {rng(col('A', 'reads_per_batch'), '%.2f')}, {rng(col('B', 'reads_per_batch'), '%.2f')} "
          f"| {rng(col('A', 'cs_per_batch'), '%.2f')}, {rng(col('B', 'cs_per_batch'), '%.2f')}, {rng(col('redis', 'cs_per_batch'), '%.2f')} |")
if short:
    for t, c in cells.items():
        print(f"| {t.upper()} | " + " | ".join(c) + " |")
