#!/bin/bash
# Issue 20 item 6, third round: lsmgo main against this branch (mapped
# tables decoded without the block cache, 2 KiB blocks, MapBudget
# 2×CacheSize), with bbolt and Pebble, 1M keys, 2 threads, 15 s per
# workload, three rounds alternated: odd rounds run main's lsmgo first,
# even rounds the branch's. bench-main and bench-branch are lsmgo-bench
# built from main and the branch (go build -o DIR/bench-X
# ./bench/cmd/lsmgo-bench); the peers run from bench-branch's invocation
# (same peer code in both).
# Usage: run.sh DIR   (DIR holds the two binaries; outputs go to DIR/out)
cd "$1" || exit 1
W=fillrandom,readrandom,readwhilewriting
one() { # name binary engines
  mkdir -p out/$1
  echo "$1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  timeout 900 ./$2 --mode=engine --num=1000000 --duration=15s --threads=2 --workloads=$W \
    --engines=$3 --out=out/$1 --progress=off > out/$1/stdout.txt 2>&1
  echo "$1 rc=$?"
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then
    one r$r-main bench-main lsmgo; one r$r-branch bench-branch lsmgo,bbolt,pebble
  else
    one r$r-branch bench-branch lsmgo,bbolt,pebble; one r$r-main bench-main lsmgo
  fi
done
