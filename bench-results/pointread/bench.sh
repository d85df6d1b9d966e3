#!/bin/bash
# p99 of HGET/ZSCORE on a 1M-field hash / 1M-member zset: redis vs lsmgo (main and branch)
set -u
N=${N:-1000000}
MAIN=${MAIN:?lsmgo binary built from main}
BRANCH=${BRANCH:?lsmgo binary built from the branch}
out=${OUT:-/tmp/pr-bench.out}; : > $out
rm -rf /tmp/pr-r /tmp/pr-l1 /tmp/pr-l2; mkdir -p /tmp/pr-r /tmp/pr-l1 /tmp/pr-l2
redis-server --port 9101 --dir /tmp/pr-r --appendonly yes --appendfsync everysec --save '' --daemonize no >/dev/null & RP=$!
timeout 600 $MAIN serve -addr 127.0.0.1:9102 -http '' -dir /tmp/pr-l1 -appendfsync everysec >/dev/null 2>&1 & M=$!
timeout 600 $BRANCH serve -addr 127.0.0.1:9103 -http '' -dir /tmp/pr-l2 -appendfsync everysec >/dev/null 2>&1 & B=$!
sleep 2
for p in 9101 9102 9103; do
  t0=$(date +%s)
  timeout 200 redis-benchmark -p $p -n $N -r $N -c 50 -P 64 -q hset h f:__rand_int__ v:__rand_int__ >/dev/null
  timeout 200 redis-benchmark -p $p -n $N -r $N -c 50 -P 64 -q zadd z __rand_int__ m:__rand_int__ >/dev/null
  echo "load $p: $(( $(date +%s)-t0 ))s hlen $(redis-cli -p $p hlen h) zcard $(redis-cli -p $p zcard z)" >> $out
done
for round in 1 2 3; do
  for p in 9101 9102 9103; do
    for t in "hget h f:__rand_int__" "zscore z m:__rand_int__"; do
      r=$(timeout 60 redis-benchmark -p $p -n 100000 -r $N -c 50 $t 2>/dev/null | grep -A2 "latency summary" | tail -1)
      echo "round $round port $p ${t%% *}: $r" >> $out
    done
  done
done
kill $RP $M $B
