#!/bin/bash
# One round of the appendfsync-always comparison: Redis and lsmgo, each
# started fresh in an empty temp dir.
# Usage: run.sh ROUND OUTDIR NAME=LSMGO_BINARY...
# Servers: redis, then each named lsmgo binary; the order rotates by round.
# Each configuration (-P 1/16 x 50/512 connections) is one redis-benchmark
# run of SETs, 32-byte keys (20 bytes + -r's 12 digits), 128-byte values.
# Server fsync calls (fsync + fdatasync) are counted with perf stat on the
# server's pid; CPU is the server's utime+stime from /proc.
set -u
round=$1; out=$2; shift 2
names=(redis); declare -A bins
for a in "$@"; do names+=("${a%%=*}"); bins[${a%%=*}]=${a#*=}; done
mkdir -p $out
srvpid=""
cleanup() { [ -n "$srvpid" ] && kill $srvpid 2>/dev/null && wait $srvpid 2>/dev/null; }
trap cleanup EXIT
val=$(printf 'v%.0s' $(seq 128))
key=kkkkkkkkkkkkkkkkkkkk:__rand_int__
start_redis() {
  d=$(mktemp -d /tmp/fsyncbench-redis-XXXX)
  redis-server --port 17613 --bind 127.0.0.1 --appendonly yes --appendfsync always --save '' --dir $d --daemonize no --logfile $d/log > /dev/null 2>&1 &
  srvpid=$!; port=17613
  for i in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
}
start_lsmgo() {
  d=$(mktemp -d /tmp/fsyncbench-lsmgo-XXXX)
  ${bins[$1]} serve --appendfsync always --dir $d/data --addr 127.0.0.1:17614 --http 127.0.0.1:17615 > $d/out 2> $d/log &
  srvpid=$!; port=17614
  for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
}
alive() { kill -0 $srvpid 2>/dev/null || { echo "server $1 did not start" >&2; exit 1; }; }
cpu() { awk '{print $14+$15}' /proc/$srvpid/stat; }
measure() {
  name=$1
  for cfg in "1 50 50000" "16 50 200000" "1 512 60000" "16 512 200000"; do
    set -- $cfg; P=$1; C=$2; N=$3
    f=$out/$name-r$round-P$P-c$C
    echo "== round $round $name P$P c$C load $(cut -d' ' -f1-3 /proc/loadavg)" > $f.txt
    c0=$(cpu)
    perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync -p $srvpid -o $f.perf &
    perfpid=$!
    sleep 0.2
    t0=$(date +%s.%N)
    redis-benchmark -p $port -r 1000000 -n $N -c $C -P $P --csv SET $key $val > $f.csv 2>&1
    t1=$(date +%s.%N)
    kill -INT $perfpid; wait $perfpid 2>/dev/null
    c1=$(cpu)
    syncs=$(awk -F, '/sys_enter_f/ {s+=$1} END {print s}' $f.perf)
    echo "wall=$(echo "$t1 - $t0" | bc) cpu_ticks=$((c1 - c0)) n=$N syncs=$syncs writes_per_sync=$(echo "scale=1; $N / $syncs" | bc)" >> $f.txt
    tail -1 $f.csv >> $f.txt
    cat $f.txt
  done
  kill $srvpid; wait $srvpid 2>/dev/null; srvpid=""
  rm -rf $d
}
n=${#names[@]}
for i in $(seq 0 $((n - 1))); do
  s=${names[$(( (i + round) % n ))]}
  if [ $s = redis ]; then start_redis; else start_lsmgo $s; fi
  alive $s
  measure $s
done
