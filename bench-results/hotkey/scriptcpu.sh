#!/usr/bin/env bash
# Issue 19's script target with server CPU per request: redis-benchmark
# -c 50 -P 1|16 EVALSHA and FCALL of the GET/SET/EXPIRE script on one key
# (as bench.sh), against two lsmgo builds (appendfsync everysec) and
# redis-server (appendonly yes, appendfsync everysec), the three servers
# alternating which goes first, round by round; then txbench (the same 3
# commands as EVALSHA and as MULTI/EXEC). Each row is
#   round,server,test,P,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms,cpu_us_per_req
# with CPU from /proc/PID/stat (utime+stime) before and after the run.
# The servers listen on PORT0 (default 7660) to PORT0+4.
#   [N1=40000 N16=150000 NTX=20000 PORT0=7660] scriptcpu.sh OUT.csv BEFORE AFTER TXBENCH [ROUNDS]
set -u
p0=${PORT0:-7660}
out=${1:?usage: scriptcpu.sh OUT.csv BEFORE AFTER TXBENCH [ROUNDS]}; : > "$out"
before=${2:?} after=${3:?} tx=${4:?} rounds=${5:-3}
d=$(mktemp -d)
"$before" serve -addr 127.0.0.1:$p0 -http 127.0.0.1:$((p0+1)) -images no -dir $d/before -appendfsync everysec >$d/before.log 2>&1 &
bp=$!
"$after" serve -addr 127.0.0.1:$((p0+2)) -http 127.0.0.1:$((p0+3)) -images no -dir $d/after -appendfsync everysec >$d/after.log 2>&1 &
ap=$!
mkdir -p $d/redis
redis-server --port $((p0+4)) --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
trap 'kill $bp $ap $rp 2>/dev/null; wait $bp $ap $rp 2>/dev/null; rm -rf $d' EXIT
sleep 1.5
declare -A port=([before]=$p0 [after]=$((p0+2)) [redis]=$((p0+4))) pid=([before]=$bp [after]=$ap [redis]=$rp)
BODY="local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"
LIB="#!lua name=hot
redis.register_function('rmw', function(KEYS, ARGV) $BODY end)"
for w in before after redis; do
  SHA=$(redis-cli -p ${port[$w]} script load "$BODY")
  redis-cli -p ${port[$w]} function load replace "$LIB" >/dev/null
done
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
hz=$(getconf CLK_TCK)
bench() { # who test P n args...
  local who=$1 test=$2 P=$3 n=$4; shift 4
  local t0; t0=$(ticks ${pid[$who]})
  local row; row=$(timeout 120 redis-benchmark -h 127.0.0.1 -p ${port[$who]} -c 50 -n $n -P $P --csv "$@" 2>/dev/null |
    tail -n 1 | tr -d '"' | cut -d, -f2-)
  local t1; t1=$(ticks ${pid[$who]})
  echo "$round,$who,$test,P$P,$row,$(awk -v a=$t0 -v b=$t1 -v n=$n -v hz=$hz 'BEGIN{printf "%.1f", (b-a)/hz*1e6/n}')" >> "$out"
}
for round in $(seq 1 $rounds); do
  case $((round % 3)) in 1) order="before after redis";; 2) order="redis before after";; 0) order="after redis before";; esac
  for P in 1 16; do
    n=$((P==1 ? ${N1:-40000} : ${N16:-150000}))
    for who in $order; do
      bench $who evalsha $P $n evalsha $SHA 1 hot:script
      bench $who fcall $P $n fcall rmw 1 hot:fn
    done
  done
  for who in $order; do
    timeout 120 "$tx" -addr 127.0.0.1:${port[$who]} -n ${NTX:-20000} -c 50 -keys 1 | sed "s/^/$round,$who,txbench,/" >> "$out"
  done
done
