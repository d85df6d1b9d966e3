#!/bin/bash
set -u
B=/tmp/meas; out=/tmp/meas/prof; mkdir -p $out
d=$(mktemp -d /tmp/meas/lsmgo-XXXX)
$B/lsmgo serve --appendfsync everysec --dir $d/data --addr 127.0.0.1:9001 --http 127.0.0.1:8080 > $d/out 2> $d/log &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf $d' EXIT
for i in $(seq 100); do redis-cli -p 9001 ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-benchmark -p 9001 -t set -d 128 -r 1000000 -n 300000 -c 50 -P 16 -q > /dev/null
prof() { # name, load command...
  name=$1; shift
  "$@" > /dev/null 2>&1 &
  lp=$!
  sleep 1
  curl -s -o $out/$name.pprof "http://127.0.0.1:8080/debug/pprof/profile?seconds=8"
  kill $lp; wait $lp 2>/dev/null
  echo "== $name load $(cut -d' ' -f1 /proc/loadavg)"
}
prof get-P1 redis-benchmark -p 9001 -t get -d 128 -r 1000000 -c 50 -P 1 -n 100000000
prof get-P16 redis-benchmark -p 9001 -t get -d 128 -r 1000000 -c 50 -P 16 -n 100000000
prof set-P1 redis-benchmark -p 9001 -t set -d 128 -r 1000000 -c 50 -P 1 -n 100000000
prof mix-c512 $B/lsmgo-bench --mode=client --addr=127.0.0.1:9001 --concurrency 512 --duration 10s --progress=off
curl -s "http://127.0.0.1:8080/debug/pprof/heap" -o $out/heap.pprof
