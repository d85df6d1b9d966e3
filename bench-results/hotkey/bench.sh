#!/usr/bin/env bash
# Hot-key writes (issue 20 item 2, issue 19's scripting target): every
# call hits one fixed key. redis-benchmark -c 50 at -P 1 and -P 16 runs
# LPUSH, HSET and ZADD of one key, EVALSHA of a 3-command
# read-modify-write script (GET, SET, EXPIRE) and FCALL of the same as a
# function, against lsmgo serve (appendfsync everysec) and redis-server
# (appendonly yes, appendfsync everysec); then txbench (go-redis, c50)
# runs the same 3 commands as EVALSHA and as MULTI/EXEC on one key. The
# servers alternate which goes first, round by round.
#   [FSYNC=everysec N1=30000 N16=100000 NTX=20000 PPROF=secs] bench.sh OUT.txt LSMGO TXBENCH [ROUNDS]
# PPROF, when set, takes a CPU profile of lsmgo over its first -P 1
# script test (to OUT.txt.pprof).
set -u
out=${1:?usage: bench.sh OUT.txt LSMGO TXBENCH [ROUNDS]}; : > "$out"
bin=${2:?lsmgo binary}
tx=${3:?txbench binary}
rounds=${4:-3}
LPORT=17451 RPORT=17452 HPORT=17453
d=$(mktemp -d)
"$bin" serve -addr 127.0.0.1:$LPORT -http 127.0.0.1:$HPORT -images no -dir $d/lsmgo -appendfsync ${FSYNC:-everysec} >$d/lsmgo.log 2>&1 &
lp=$!
mkdir -p $d/redis
redis-server --port $RPORT --bind 127.0.0.1 --save '' --appendonly yes --appendfsync ${FSYNC:-everysec} --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
trap 'kill $lp $rp 2>/dev/null; wait $lp $rp 2>/dev/null; rm -rf $d' EXIT
sleep 1
BODY="local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"
LIB="#!lua name=hot
redis.register_function('rmw', function(KEYS, ARGV) $BODY end)"
for port in $LPORT $RPORT; do
  SHA=$(redis-cli -p $port script load "$BODY")
  redis-cli -p $port function load replace "$LIB" >/dev/null
done
bench() { # who port P n args...
  local who=$1 port=$2 P=$3 n=$4; shift 4
  timeout 300 redis-benchmark -h 127.0.0.1 -p $port -c 50 -n $n -P $P --csv "$@" 2>/dev/null |
    tail -n +2 | tr -d '"' | sed "s/^/$round,$who,P$P,/" >> "$out"
}
side() { # who port P
  local n=$((P==1 ? ${N1:-30000} : ${N16:-100000}))
  bench $1 $2 $3 $n lpush hot:list x
  bench $1 $2 $3 $n hset hot:hash f v
  bench $1 $2 $3 $n zadd hot:zset 1 m
  if [ -n "${PPROF:-}" ] && [ $1 = lsmgo ] && [ $3 = 1 ] && [ $round = 1 ]; then
    curl -s -o "$out.pprof" "http://127.0.0.1:$HPORT/debug/pprof/profile?seconds=$PPROF" &
    cp=$!
  fi
  bench $1 $2 $3 $n evalsha $SHA 1 hot:script
  bench $1 $2 $3 $n fcall rmw 1 hot:fn
  [ -n "${cp:-}" ] && { wait $cp; cp=; }
}
for round in $(seq 1 $rounds); do
  for P in 1 16; do
    if [ $((round % 2)) = 1 ]; then side lsmgo $LPORT $P; side redis $RPORT $P
    else side redis $RPORT $P; side lsmgo $LPORT $P; fi
  done
  for who in lsmgo redis; do
    port=$LPORT; [ $who = redis ] && port=$RPORT
    timeout 300 "$tx" -addr 127.0.0.1:$port -n ${NTX:-20000} -c 50 -keys 1 | sed "s/^/$round,$who,txbench,/" >> "$out"
  done
done
