#!/bin/bash
# Rounds 2 and 3 after the slot, at nice 19 (as every session outside its
# slot), without bbolt: its unmeasured 1M-key prefill alone outlasts what
# was left (see the end). Same binaries and flags as run.sh.
# Usage: nice.sh DIR DEADLINE
cd "$1" || exit 1
DEADLINE=$2
W=fillrandom,readrandom,readwhilewriting
one() { # name binary engines
  local now; now=$(date +%s)
  if [ $((now + 200)) -gt "$DEADLINE" ]; then echo "$1 skipped at $(date -u +%T)"; return; fi
  mkdir -p out/$1
  echo "$1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  nice -n 19 ionice -c3 timeout 600 ./$2 --mode=engine --num=1000000 --duration=15s --threads=2 --workloads=$W \
    --engines=$3 --out=out/$1 --progress=off > out/$1/stdout.txt 2>&1
  echo "$1 rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
}
one r2-branch bench-branch lsmgo
one r2-main bench-main lsmgo
one r2-pebble bench-branch pebble
one r3-main bench-main lsmgo
one r3-branch bench-branch lsmgo
one r3-pebble bench-branch pebble
# Appended while rounds 2 and 3 ran (they went faster than feared), run
# once the six runs above had ended, as far as the deadline allowed:
#   one r2-bbolt bench-branch bbolt; one r3-bbolt bench-branch bbolt
