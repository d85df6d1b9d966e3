#!/bin/bash
# Run from a directory holding lsmgo-main and lsmgo-branch (go build ./server/cmd/lsmgo at each commit).
# A/B: main vs branch lsmgo, no replicas, SET c50 at P1 and P16; CPU/request from /proc.
run() { # bin port P
  rm -rf d$2; $1 serve --addr 127.0.0.1:$2 --dir d$2 --http "" --appendfsync everysec >log$2 2>&1 & pid=$!
  for i in $(seq 50); do redis-cli -p $2 ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p $2 -t set -c 50 -P $3 -n 100000 -r 100000 -d 128 -q >/dev/null 2>&1  # warm
  a=$(awk '{print $14+$15}' /proc/$pid/stat)
  out=$(redis-benchmark -p $2 -t set -c 50 -P $3 -n 300000 -r 1000000 -d 128 -q 2>/dev/null | tr '\r' '\n' | grep "requests per second" | tail -1)
  b=$(awk '{print $14+$15}' /proc/$pid/stat)
  rps=$(echo "$out" | grep -o '[0-9.]* requests per second' | cut -d' ' -f1)
  echo "$(basename $1) P$3 rps=$rps cpu_us_per_req=$(echo "($b-$a)*10000/300000" | bc -l | cut -c1-5)"
  kill $pid; wait $pid 2>/dev/null
}
for r in 1 2 3; do for P in 1 16; do run ./lsmgo-main 7701 $P; run ./lsmgo-branch 7702 $P; done; done
