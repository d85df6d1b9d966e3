#!/bin/bash
# Issue 20 item 6 in a quiet slot (other sessions' work at nice 19): lsmgo
# main against this branch, with bbolt and Pebble, 1M keys, 2 threads,
# 15 s per workload, rounds alternated (odd rounds main first). bbolt's
# unmeasured 1M-key prefill takes minutes, so it runs only where it still
# fits before the slot's end; every run that would end after DEADLINE
# (seconds since the epoch) is skipped and logged.
# bench-main and bench-branch are lsmgo-bench built from main and the
# branch (go build -o DIR/bench-X ./bench/cmd/lsmgo-bench); the peers run
# from bench-branch (the peers' code is the same in both).
# Usage: run.sh DIR DEADLINE   (outputs in DIR/out, log on stdout; NUM and
# DUR override --num and --duration for a trial run)
cd "$1" || exit 1
DEADLINE=$2
W=fillrandom,readrandom,readwhilewriting
one() { # name binary engines seconds-it-may-take
  local now; now=$(date +%s)
  if [ $((now + $4)) -gt "$DEADLINE" ]; then
    echo "$1 skipped at $(date -u +%T): $4 s would pass the slot's end"
    return
  fi
  mkdir -p out/$1
  echo "$1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  timeout $((DEADLINE - now)) ./$2 --mode=engine --num=${NUM:-1000000} --duration=${DUR:-15s} --threads=2 --workloads=$W \
    --engines=$3 --out=out/$1 --progress=off > out/$1/stdout.txt 2>&1
  echo "$1 rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
}
one r1-main bench-main lsmgo 100
one r1-branch bench-branch lsmgo 100
one r1-pebble bench-branch pebble 110
one r1-bbolt bench-branch bbolt 240
one r2-branch bench-branch lsmgo 100
one r2-main bench-main lsmgo 100
one r2-pebble bench-branch pebble 110
one r3-main bench-main lsmgo 100
one r3-branch bench-branch lsmgo 100
one r3-pebble bench-branch pebble 110
one r3-bbolt bench-branch bbolt 240
