#!/usr/bin/env bash
# Alternated rounds of redis-benchmark's collection tests against lsmgo
# serve (appendfsync everysec) and redis-server 7 (appendonly yes,
# appendfsync everysec), both on loopback ports, -c 50, -P 1 and -P 16.
# Each round runs the whole -t list once per server, the two servers in
# turn (which goes first alternates by round); both keep their data from
# round to round, as one long redis-benchmark session would.
#   [N1=50000 N16=200000] bench-results/issue20/bench.sh OUT.csv LSMGO_BINARY [ROUNDS] [TESTS] [C]
# N1 and N16 are the requests per test at -P 1 and -P 16.
set -u
out=${1:?usage: bench.sh OUT.csv LSMGO_BINARY [ROUNDS] [TESTS] [C]}; : > $out
bin=${2:?lsmgo binary}
rounds=${3:-3}
tests=${4:-set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset}
conns=${5:-50}
d=$(mktemp -d)
$bin serve -addr 127.0.0.1:17441 -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 &
lp=$!
mkdir -p $d/redis
redis-server --port 17442 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
sleep 1
run() { # who port P n
  timeout 400 redis-benchmark -h 127.0.0.1 -p $2 -c $conns -n $4 -P $3 -r 100000 -t $tests --csv 2>/dev/null |
    tail -n +2 | tr -d '"' | sed "s/^/$round,$1,P$3,/" >> $out
}
for round in $(seq 1 $rounds); do
  for P in 1 16; do
    n=$((P==1 ? ${N1:-50000} : ${N16:-200000}))
    if [ $((round % 2)) = 1 ]; then
      run lsmgo 17441 $P $n; run redis 17442 $P $n
    else
      run redis 17442 $P $n; run lsmgo 17441 $P $n
    fi
  done
done
kill $lp $rp; wait $lp $rp 2>/dev/null; rm -rf $d
