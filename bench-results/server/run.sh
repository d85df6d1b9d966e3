#!/bin/bash
# One round: redis then lsmgo (or reversed with REVERSE=1), each fresh in its own temp dir.
# Usage: run.sh ROUND OUTDIR
set -u
round=$1; out=$2; mkdir -p $out
B=/tmp/meas
srvpid=""
cleanup() { [ -n "$srvpid" ] && kill $srvpid 2>/dev/null && wait $srvpid 2>/dev/null; }
trap cleanup EXIT
start_redis() {
  d=$(mktemp -d /tmp/meas/redis-XXXX)
  redis-server --port 6379 --bind 127.0.0.1 --appendonly yes --appendfsync everysec --save '' --dir $d --daemonize no --logfile $d/log > /dev/null 2>&1 &
  srvpid=$!; port=6379
  for i in $(seq 50); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
}
start_lsmgo() {
  d=$(mktemp -d /tmp/meas/lsmgo-XXXX)
  $B/lsmgo serve --appendfsync everysec --dir $d/data --addr 127.0.0.1:9001 --http 127.0.0.1:8080 > $d/out 2> $d/log &
  srvpid=$!; port=9001
  for i in $(seq 100); do redis-cli -p 9001 ping >/dev/null 2>&1 && break; sleep 0.1; done
}
measure() {
  name=$1
  echo "== round $round $name pid $srvpid load $(cut -d' ' -f1-3 /proc/loadavg)"
  for P in 1 16; do
    redis-benchmark -p $port -t set,get -d 128 -r 1000000 -n 300000 -c 50 -P $P --csv > $out/$name-r$round-P$P.csv 2>&1
    cat $out/$name-r$round-P$P.csv
  done
  $B/lsmgo-bench --mode=client --addr=127.0.0.1:$port --concurrency 512 --duration 20s --ratio 50:50 --progress=off --out $out/$name-r$round-mix > $out/$name-r$round-mix.txt 2>&1
  grep -E "^getset" $out/$name-r$round-mix.txt
  kill $srvpid; wait $srvpid 2>/dev/null; srvpid=""
  rm -rf $d
}
order="redis lsmgo"; [ $((round % 2)) = 0 ] && order="lsmgo redis"
for s in $order; do start_$s; measure $s; done
