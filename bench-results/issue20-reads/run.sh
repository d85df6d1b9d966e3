#!/bin/bash
# 1M keys, 2 threads. Per round: lsmgo main, lsmgo branch, then the peers once; order of main/branch alternates.
cd /tmp/er
W=fillrandom,readrandom,readwhilewriting
for r in 1 2 3; do
  if [ $((r%2)) = 1 ]; then order="main branch"; else order="branch main"; fi
  for b in $order peers; do
    mkdir -p out/r$r-$b
    echo "round $r $b start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ $b = peers ]; then bin=./bench-main; eng=bbolt,pebble; else bin=./bench-$b; eng=lsmgo; fi
    timeout 400 $bin --mode=engine --num=1000000 --threads=2 --workloads=$W --engines=$eng --out=out/r$r-$b --progress=off > out/r$r-$b/stdout.txt 2>&1
    echo "rc=$?"
  done
done
