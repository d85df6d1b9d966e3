#!/bin/bash
# HGET/ZSCORE p99 and RSS on a 10M-field hash and a 10M-member sorted set
# (issue 20's target): Redis 7 against lsmgo serve, both appendfsync
# everysec. load.go fills both (HSET/ZADD of 1,000 pairs, 64 in flight);
# then three alternated rounds of redis-benchmark -n 100000 -c 50 -P 1 of
# random names (all present), with server CPU per request from
# /proc/PID/stat (utime+stime) around each run.
# Usage: LSMGO=path/to/lsmgo bench.sh > out.txt   (ports 7401, 7402)
set -u
N=${N:-10000000}
LSMGO=${LSMGO:?lsmgo binary}
HERE=$(cd "$(dirname "$0")" && pwd)
go build -o /tmp/pr10m-load "$HERE/load.go" || exit 1
rm -rf /tmp/pr10m-r /tmp/pr10m-l; mkdir -p /tmp/pr10m-r /tmp/pr10m-l
timeout 1500 redis-server --port 7401 --dir /tmp/pr10m-r --appendonly yes --appendfsync everysec --save '' --daemonize no >/dev/null & RP=$!
timeout 1500 $LSMGO serve -addr 127.0.0.1:7402 -http '' -dir /tmp/pr10m-l -appendfsync everysec >/dev/null 2>&1 & LP=$!
sleep 3
# timeout's children are the servers, whose memory and CPU are measured.
RS=$(pgrep -P $RP); LS=$(pgrep -P $LP)
rss() { awk '/VmRSS/ {printf "%.0f MiB", $2/1024}' /proc/$1/status; }
cpu() { awk '{print $14+$15}' /proc/$1/stat; } # clock ticks
tck=$(getconf CLK_TCK)
for s in "7401 $RS redis" "7402 $LS lsmgo"; do
  set -- $s
  t0=$(date +%s)
  timeout 600 /tmp/pr10m-load -addr 127.0.0.1:$1 -n $N
  echo "$3 load: $(( $(date +%s)-t0 ))s hlen $(redis-cli -p $1 hlen h) zcard $(redis-cli -p $1 zcard z) rss $(rss $2) load $(cut -d' ' -f1 /proc/loadavg)"
done
sleep 5
echo "after 5 s: redis rss $(rss $RS), lsmgo rss $(rss $LS)"
for round in 1 2 3; do
  order="7401:$RS:redis 7402:$LS:lsmgo"; [ $((round % 2)) = 0 ] && order="7402:$LS:lsmgo 7401:$RS:redis"
  for s in $order; do
    IFS=: read p pid name <<< "$s"
    for t in "hget h f:__rand_int__" "zscore z m:__rand_int__"; do
      c0=$(cpu $pid)
      r=$(timeout 120 redis-benchmark -p $p -n 100000 -r $N -c 50 $t 2>/dev/null | grep -A2 "latency summary" | tail -1)
      c1=$(cpu $pid)
      echo "round $round $name ${t%% *}: avg min p50 p95 p99 max (ms) $r; server CPU/req $(( (c1-c0)*1000000/tck/100000 )) us; rss $(rss $pid); load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
kill $RP $LP
