#!/bin/bash
# Get-path control: reads after settle, zipfian keys, 1 GiB cache (everything cached).
set -u
M=/tmp/meas11
for step in 1:after 1:before 2:before 2:after; do
  r=${step%:*}; v=${step#*:}
  cmd="$M/$v/lsmgo-bench --mode=engine --num=1000000 --workloads=fillrandom,settle,readrandom,readrandom:2 --distribution=zipfian --cache-size=1073741824 --engines=lsmgo --progress=off --out=$M/y$r-$v-engine"
  echo "y$r $v start $(date -u +%T) load=$(cut -d' ' -f1 /proc/loadavg): $cmd" >>$M/y.log
  s=$(date +%s); timeout 300 $cmd > $M/y$r-$v-engine.txt 2>&1; echo "y$r $v rc=$? took $(( $(date +%s)-s ))s" >>$M/y.log
done
