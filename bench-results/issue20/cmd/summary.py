#!/usr/bin/env python3
"""Summarizes a loop_ab.sh CSV of main (A), a branch (B) and Redis:
per test and pipeline depth, the range over rounds of CPU µs per request
and requests/s of each, B ÷ A CPU per round, and req/s ÷ Redis per round.
    summary.py FILE.csv"""
import csv, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
by = defaultdict(dict)  # (test, P) -> round -> who -> row
for r in rows:
    if not r['rps']:
        continue
    by[(r['test'], int(r['P']))].setdefault(r['round'], {})[r['who']] = r

def rng(vals, fmt):
    return fmt % min(vals) if min(vals) == max(vals) else (fmt + '–' + fmt) % (min(vals), max(vals))

print('| test | P | CPU µs/req main / branch / Redis | branch ÷ main CPU per round | req/s ÷ Redis main / branch, per round |')
print('|---|---|---|---|---|')
for (test, P) in sorted(by, key=lambda k: (k[1], k[0])):
    rounds = by[(test, P)]
    cpu = {w: [float(v[w]['cpu_us_per_req']) for v in rounds.values() if w in v] for w in ('A', 'B', 'redis')}
    full = [v for _, v in sorted(rounds.items()) if all(w in v for w in ('A', 'B', 'redis'))]
    ratio = ', '.join('%.2f' % (float(v['B']['cpu_us_per_req']) / float(v['A']['cpu_us_per_req'])) for v in full)
    rel = lambda w: ', '.join('%.2f' % (float(v[w]['rps']) / float(v['redis']['rps'])) for v in full)
    print('| %s | %d | %s / %s / %s | %s | %s / %s |' % (test.upper(), P, rng(cpu['A'], '%.1f'), rng(cpu['B'], '%.1f'),
          rng(cpu['redis'], '%.1f'), ratio, rel('A'), rel('B')))
