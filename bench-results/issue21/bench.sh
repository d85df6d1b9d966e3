#!/usr/bin/env bash
# Three alternated rounds of redis-benchmark (and randbit.go for random
# offsets of one key) against lsmgo serve (appendfsync everysec) and
# redis-server (appendonly yes, everysec), -c 50, -P 1 and -P 16. Run from
# the repository root: bench-results/issue21/bench.sh OUT.csv ./lsmgo
set -u
out=${1:?usage: bench.sh OUT.csv [LSMGO_BINARY]}; : > $out
bin=${2:-lsmgo}
d=$(mktemp -d)
# The random-offset client (redis-benchmark cannot randomize an offset:
# __rand_int__ is zero-padded, which SETBIT refuses).
go build -o $d/randbit "$(dirname "$0")/randbit.go" || exit 1
$bin serve -addr 127.0.0.1:17341 -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 &
lp=$!
mkdir -p $d/redis
redis-server --port 17342 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
sleep 1
run() { # server port P n name args...
  local who=$1 port=$2 P=$3 n=$4 name=$5; shift 5
  local line
  line=$(timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 50 -n $n -P $P -r 100000 --csv "$@" 2>/dev/null | tail -1)
  echo "$round,$who,$name,P$P,$line" >> $out
}
for round in 1 2 3; do
  for P in 1 16; do
    n=$((P==1 ? 60000 : 300000))
    for spec in "setbit-keys|SETBIT bm:__rand_int__ 7 1" "getbit-keys|GETBIT bm:__rand_int__ 7" "pfadd|PFADD hll __rand_int__" "pfcount|PFCOUNT hll"; do
      name=${spec%%|*}; cmd=${spec#*|}
      # Alternate which server goes first each round.
      if [ $((round % 2)) = 1 ]; then
        run lsmgo 17341 $P $n $name $cmd; run redis 17342 $P $n $name $cmd
      else
        run redis 17342 $P $n $name $cmd; run lsmgo 17341 $P $n $name $cmd
      fi
    done
    for c in SETBIT GETBIT; do
      for who in lsmgo redis; do
        port=$([ $who = lsmgo ] && echo 17341 || echo 17342)
        echo "$round,$who,$c-offsets,P$P,$(timeout 120 $d/randbit -addr 127.0.0.1:$port -c 50 -P $P -n $((n/2)) -r 1048576 -cmd $c -key bitmap)" >> $out
      done
    done
  done
done
redis-cli -p 17341 strlen hll >> $out; redis-cli -p 17342 strlen hll >> $out
redis-cli -p 17341 pfcount hll >> $out; redis-cli -p 17342 pfcount hll >> $out
kill $lp $rp; wait $lp $rp 2>/dev/null; rm -rf $d
