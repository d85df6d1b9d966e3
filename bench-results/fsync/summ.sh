#!/bin/bash
# summ.sh DIR: one line per run of run.sh: configuration, server, round, requests/s,
# p50 and p99 (ms, as redis-benchmark reports them), writes per fsync, server CPU µs per SET.
for f in $1/*.txt; do
  b=$(basename $f .txt); srv=${b%%-r*}; rest=${b#*-r}; round=${rest%%-*}; cfg=${rest#*-}
  n=$(grep -o "n=[0-9]*" $f | cut -d= -f2); cpu=$(grep -o "cpu_ticks=[0-9]*" $f | cut -d= -f2)
  wps=$(grep -o "writes_per_sync=[0-9.]*" $f | cut -d= -f2)
  IFS=, read -r _ rps avg min p50 p95 p99 max < <(tail -1 $1/$b.csv | sed 's/"SET[^,]*,//; s/"//g' | sed 's/^/x,/')
  echo "$cfg $srv r$round rps=$rps p50=$p50 p99=$p99 wps=$wps cpu_us=$(echo "scale=1; $cpu*10000/$n" | bc)"
done | sort
