#!/bin/bash
# Control run: reads after settle (no compaction debt) and a rate-limited writer.
set -u
M=/tmp/meas11
for step in 1:before 1:after 2:after 2:before; do
  r=${step%:*}; v=${step#*:}
  cmd="$M/$v/lsmgo-bench --mode=engine --num=1000000 --workloads=fillrandom,settle,readrandom,readwhilewriting --writer-rate=20000 --engines=lsmgo --progress=off --out=$M/x$r-$v-engine"
  echo "x$r $v start $(date -u +%T) load=$(cut -d' ' -f1 /proc/loadavg): $cmd" >>$M/x.log
  s=$(date +%s); timeout 300 $cmd > $M/x$r-$v-engine.txt 2>&1; echo "x$r $v rc=$? took $(( $(date +%s)-s ))s" >>$M/x.log
done
