#!/usr/bin/env python3
"""table.py DIR: the BENCHMARKS.md table from summ.sh's lines for DIR:
median (min-max) per configuration and server, and lsmgo/Redis per round."""
import statistics, subprocess, sys, collections, os
here = os.path.dirname(os.path.abspath(__file__))
out = subprocess.run([os.path.join(here, "summ.sh"), sys.argv[1]], capture_output=True, text=True).stdout
runs = collections.defaultdict(dict)
for line in out.splitlines():
    cfg, srv, rnd, *kv = line.split()
    runs[(cfg, srv)][rnd] = {k: float(v) for k, v in (f.split("=") for f in kv)}
def med(cfg, srv, k):
    v = [r[k] for r in runs[(cfg, srv)].values()]
    return statistics.median(v), min(v), max(v)
def fmt(x):
    return f"{x/1000:.1f}k" if x >= 1000 else f"{x:.0f}"
servers = sorted({s for _, s in runs} - {"redis"})
for cfg in ["P1-c50", "P1-c512", "P16-c50", "P16-c512"]:
    r = med(cfg, "redis", "rps")
    cells = [f"{fmt(r[0])} ({fmt(r[1])}–{fmt(r[2])})", f"{med(cfg,'redis','p99')[0]:.0f}",
             f"{med(cfg,'redis','wps')[0]:.0f}", f"{med(cfg,'redis','cpu_us')[0]:.1f}"]
    for s in servers:
        m = med(cfg, s, "rps")
        per = [runs[(cfg, s)][k]["rps"] / runs[(cfg, "redis")][k]["rps"] for k in sorted(runs[(cfg, s)])]
        cells += [f"{fmt(m[0])} ({fmt(m[1])}–{fmt(m[2])})", f"{med(cfg,s,'p99')[0]:.0f}",
                  f"{med(cfg,s,'wps')[0]:.0f}", f"{med(cfg,s,'cpu_us')[0]:.1f}",
                  f"{m[0]/r[0]:.2f} ({', '.join(f'{x:.2f}' for x in per)})"]
    print(f"| {cfg.replace('-', ' ').replace('P', '-P ').replace('c', '-c ')} | " + " | ".join(cells) + " |")
print("servers:", ["redis"] + servers)
