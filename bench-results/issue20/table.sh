#!/usr/bin/env bash
# The issue's full redis-benchmark table: lsmgo serve (appendfsync
# everysec) and redis-server 7 (appendonly yes, appendfsync everysec) on
# loopback, one test per redis-benchmark run, the two servers in turn
# (which goes first alternates by round), at -P 1 and -P 16. Each row has
# redis-benchmark's CSV figures and the server's CPU per request (user +
# system from /proc/PID/stat around the run), steadier than req/s on a
# shared machine. Both servers keep their data from run to run.
#   [N1=20000 N16=100000] table.sh OUT.csv LSMGO_BINARY [ROUNDS] [CONNS] [TESTS]
set -u
out=${1:?usage: table.sh OUT.csv LSMGO_BINARY [ROUNDS] [CONNS] [TESTS]}; : > $out
bin=${2:?lsmgo binary}
rounds=${3:-3}
conns=${4:-50}
tests=${5:-set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,mset}
lport=${LPORT:-7341} rport=${RPORT:-7342}
d=$(mktemp -d)
$bin serve -addr 127.0.0.1:$lport -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 & lp=$!
mkdir -p $d/redis
redis-server --port $rport --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d/redis >$d/redis.log 2>&1 & rp=$!
sleep 1
tick=$(getconf CLK_TCK)
cpu() { awk -v t=$tick '{print ($14+$15)/t}' /proc/$1/stat; }
run() { # who port pid P n test
  local c0=$(cpu $3) line
  line=$(timeout 300 redis-benchmark -h 127.0.0.1 -p $2 -c $conns -n $5 -P $4 -r 100000 -t $6 --csv 2>/dev/null |
    tail -n +2 | grep -v needed | head -1 | tr -d '"')
  local c1=$(cpu $3)
  echo "$round,$1,c$conns,P$4,$line,$(awk -v a=$c0 -v b=$c1 -v n=$5 'BEGIN{printf "%.2f", (b-a)*1e6/n}')" >> $out
}
for round in $(seq 1 $rounds); do
  for P in 1 16; do
    n=$((P==1 ? ${N1:-20000} : ${N16:-100000}))
    for t in ${tests//,/ }; do
      if [ $((round % 2)) = 1 ]; then
        run lsmgo $lport $lp $P $n $t; run redis $rport $rp $P $n $t
      else
        run redis $rport $rp $P $n $t; run lsmgo $lport $lp $P $n $t
      fi
    done
  done
done
kill $lp $rp; wait $lp $rp 2>/dev/null; rm -rf $d
