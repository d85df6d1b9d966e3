#!/usr/bin/env bash
# Issue 21's performance table: XADD (* MAXLEN ~ 1000), XREADGROUP+XACK
# pairs, SETBIT/GETBIT at random offsets below 2^32 of one key,
# PFADD/PFCOUNT, GEOADD/GEOSEARCH (radius 200 km), 50 connections, -P 1
# and -P 16, against lsmgo serve (appendfsync everysec) and redis-server
# 7 (appendonly yes, everysec), three rounds, the order of the servers
# alternated each round. redis-benchmark where it can express the
# command, load21.go where it cannot. Each row also records the server's
# CPU time over the run (utime+stime from /proc). Run from the repository
# root: bench-results/issue21/table.sh OUT.csv ./lsmgo ["setbit getbit"]
# (the third argument, or WORKLOADS="xadd xpair", picks workloads; default
# all. PORTS="7130 7131", or LSMGO_PORT and REDIS_PORT, move the servers
# off the default ports.)
set -u
out=${1:?usage: table.sh OUT.csv [LSMGO_BINARY] [WORKLOADS]}; : > $out
bin=${2:-lsmgo}
workloads=${3:-${WORKLOADS:-xadd xpair setbit getbit pfadd pfcount geoadd geosearch}}
read lport rport <<< "${PORTS:-${LSMGO_PORT:-17361} ${REDIS_PORT:-17362}}"
d=$(mktemp -d)
go build -o $d/load21 "$(dirname "$0")/load21.go" || exit 1
$bin serve -addr 127.0.0.1:$lport -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 &
lp=$!
mkdir -p $d/redis
redis-server --port $rport --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
sleep 1
for port in $lport $rport; do
  redis-cli -p $port XGROUP CREATE xq g '$' MKSTREAM >/dev/null
  redis-cli -p $port SETBIT bm 4294967295 1 >/dev/null # Redis allocates its 512 MiB here, not in a timed run
done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
run() { # who P name command...
  local who=$1 P=$2 name=$3; shift 3
  local port=$lport pid=$lp
  [ $who = redis ] && port=$rport pid=$rp
  local n=$((P==1 ? 20000 : 100000))
  local c0 line
  c0=$(cpu $pid)
  case $name in
    xadd) line=$(timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 50 -n $n -P $P --csv XADD xs MAXLEN '~' 1000 '*' f v 2>/dev/null | tail -1) ;;
    pfadd) line=$(timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 50 -n $n -P $P -r 100000 --csv PFADD hll __rand_int__ 2>/dev/null | tail -1) ;;
    pfcount) line=$(timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 50 -n $n -P $P --csv PFCOUNT hll 2>/dev/null | tail -1) ;;
    xpair)
      n=$((n/2))
      local cp=$(cpu $pid)
      timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 4 -n $((n+1000)) -P 64 XADD xq '*' f v >/dev/null 2>&1
      c0=$((c0 + $(cpu $pid) - cp))
      line=$(timeout 120 $d/load21 -addr 127.0.0.1:$port -mode xpair -key xq -c 50 -P $P -n $n) ;;
    setbit|getbit) line=$(timeout 120 $d/load21 -addr 127.0.0.1:$port -mode $name -key bm -r 4294967296 -c 50 -P $P -n $n) ;;
    geoadd) line=$(timeout 120 $d/load21 -addr 127.0.0.1:$port -mode geoadd -key geo -r 100000 -c 50 -P $P -n $n) ;;
    geosearch) line=$(timeout 120 $d/load21 -addr 127.0.0.1:$port -mode geosearch -key geo -c 50 -P $P -n $n) ;;
  esac
  echo "$round,$who,$name,P$P,$n,$(( $(cpu $pid) - c0 )),$line" >> $out
}
for round in 1 2 3; do
  for P in 1 16; do
    for name in $workloads; do
      if [ $((round % 2)) = 1 ]; then
        run lsmgo $P $name; run redis $P $name
      else
        run redis $P $name; run lsmgo $P $name
      fi
    done
  done
done
kill $lp $rp; wait $lp $rp 2>/dev/null; rm -rf $d
