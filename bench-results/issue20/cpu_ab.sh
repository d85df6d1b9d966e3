#!/usr/bin/env bash
# Server CPU per request (user+system, from /proc/PID/stat) and rate of
# two lsmgo builds, A and B, side by side: for each test and round both
# get the same redis-benchmark run, in alternating order. CPU per request
# moves far less than throughput on a shared, overloaded machine.
#   bench-results/issue20/cpu_ab.sh OUT.csv A_BINARY B_BINARY [ROUNDS] [TESTS] [P] [N]
set -u
out=${1:?usage}; : > $out
a=${2:?A binary}; b=${3:?B binary}
rounds=${4:-3}; tests=${5:-lpush,hset,zadd,incr,sadd,lpop,zpopmin,spop}; P=${6:-16}; n=${7:-100000}
d=$(mktemp -d)
$a serve -addr 127.0.0.1:17461 -http '' -dir $d/a -appendfsync everysec >$d/a.log 2>&1 & ap=$!
$b serve -addr 127.0.0.1:17462 -http '' -dir $d/b -appendfsync everysec >$d/b.log 2>&1 & bp=$!
sleep 1
tick=$(getconf CLK_TCK)
cpu() { awk -v t=$tick '{print ($14+$15)/t}' /proc/$1/stat; }
run() { # who port pid test
  local c0=$(cpu $3) line
  line=$(timeout 300 redis-benchmark -h 127.0.0.1 -p $2 -c 50 -n $n -P $P -r 100000 -t $4 --csv 2>/dev/null | tail -n +2 | grep -v needed | head -1 | tr -d '"')
  local c1=$(cpu $3)
  local rps=$(echo "$line" | cut -d, -f2)
  echo "$round,$1,$4,$rps,$(awk -v a=$c0 -v b=$c1 -v n=$n 'BEGIN{printf "%.2f", (b-a)*1e6/n}')" >> $out
}
for round in $(seq 1 $rounds); do
  for t in ${tests//,/ }; do
    if [ $((round % 2)) = 1 ]; then run A 17461 $ap $t; run B 17462 $bp $t
    else run B 17462 $bp $t; run A 17461 $ap $t; fi
  done
done
kill $ap $bp; wait $ap $bp 2>/dev/null; rm -rf $d
