"""Prints the before/after table of issue 20 item 6 from the results.json
files of run.sh's rounds (rN-main, rN-branch: lsmgo; rN-peers: bbolt and
Pebble), one line per round and workload."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
rows = {}
for f in sorted(root.glob("r*-*/results.json")):
    rnd, side = f.parent.name.split("-", 1)
    for r in json.load(open(f))["results"]:
        name = r["engine"] if side == "peers" else side
        rows.setdefault((rnd, r["workload"]), {})[name] = r

print("| round | workload | main ops/s | branch ops/s | bbolt ops/s | pebble ops/s | branch ÷ main | main ÷ bbolt | branch ÷ bbolt | CPU/op main, branch, bbolt | peak RSS main, branch, bbolt, pebble |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
for (rnd, wl), e in sorted(rows.items()):
    if wl == "fillrandom" or not {"main", "branch"} <= e.keys():
        continue
    ops = {k: v["ops_per_sec"] for k, v in e.items()}
    cpu = {k: v["cpu_seconds"] / v["ops"] * 1e6 for k, v in e.items()}
    rss = {k: v["peak_rss"] / 2**20 for k, v in e.items()}
    b = ops.get("bbolt")
    ratio = lambda x: f"{x / b:.2f}" if b else "–"
    print(f"| {rnd} | {wl} | {ops['main']/1e3:.0f}k | {ops['branch']/1e3:.0f}k | "
          f"{(b or 0)/1e3:.0f}k | {ops.get('pebble', 0)/1e3:.1f}k | {ops['branch']/ops['main']:.2f} | "
          f"{ratio(ops['main'])} | {ratio(ops['branch'])} | "
          + ", ".join(f"{cpu[k]:.1f}" for k in ("main", "branch", "bbolt") if k in cpu) + " µs | "
          + ", ".join(f"{rss[k]:.0f}" for k in ("main", "branch", "bbolt", "pebble") if k in rss) + " MiB |")
