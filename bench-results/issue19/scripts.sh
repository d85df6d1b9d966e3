#!/bin/bash
# Issue 19's scripting benchmark: EVALSHA of a 3-command read-modify-write
# script (GET, SET, EXPIRE) with redis-benchmark at -c 50, -P 1 and -P 16,
# against lsmgo serve (appendfsync everysec) and redis-server (appendonly
# yes, appendfsync everysec), ROUNDS alternated rounds; then the same
# three commands as EVALSHA and as MULTI/EXEC from server/internal/txbench
# (go build -o txbench ./server/internal/txbench; TXBENCH=./txbench).
#
# usage: LSMGO=path/to/lsmgo bench-results/issue19/scripts.sh > out.txt
set -euo pipefail
LSMGO=${LSMGO:?path to the lsmgo binary}
N=${N:-100000}
ROUNDS=${ROUNDS:-3}
LPORT=${LPORT:-16501}
RPORT=${RPORT:-16502}
DIR=$(mktemp -d)
trap 'kill $LPID $RPID 2>/dev/null; wait $LPID $RPID 2>/dev/null; rm -rf "$DIR"' EXIT
"$LSMGO" serve --dir "$DIR/lsmgo" --addr 127.0.0.1:$LPORT --http "" --appendfsync everysec --loglevel warning &
LPID=$!
redis-server --port $RPORT --bind 127.0.0.1 --dir "$DIR" --save '' --appendonly yes --appendfsync everysec --logfile "$DIR/redis.log" &
RPID=$!
sleep 1
BODY="local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"
for port in $LPORT $RPORT; do SHA=$(redis-cli -p $port script load "$BODY"); done
echo "script sha $SHA"
for round in $(seq 1 "$ROUNDS"); do
  for p in 1 16; do
    for side in lsmgo redis; do
      port=$LPORT; [ $side = redis ] && port=$RPORT
      redis-benchmark -p $port -n "$N" -c 50 -P $p -r 1000 -q --precision 3 \
        evalsha "$SHA" 1 key:__rand_int__ 2>&1 | tr '\r' '\n' | grep -a "requests per second" | sed "s/^/round=$round P=$p $side /"
    done
  done
done
if [ -n "${TXBENCH:-}" ]; then
  for round in $(seq 1 "$ROUNDS"); do
    for side in lsmgo redis; do
      port=$LPORT; [ $side = redis ] && port=$RPORT
      "$TXBENCH" -addr 127.0.0.1:$port -n "$((N / 5))" -c 50 | sed "s/^/round=$round $side /"
    done
  done
fi
