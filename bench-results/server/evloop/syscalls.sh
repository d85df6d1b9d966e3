#!/bin/bash
# System calls and CPU per command of one server under the 50:50 mix at
# pipeline 1 (50, then 512 connections): perf stat -I counts over the
# server's whole life (every thread, including those started later), with
# marks of when each 6-second window began and ended and INFO's command
# count at both; perfsum.py NAME divides one by the other. Also takes a CPU
# profile and an allocation profile of each window.
# Usage: B=DIR syscalls.sh NAME /path/to/lsmgo PORT ["ENV=VAL ..."]
set -u
name=$1; bin=$2; port=$3; extra=${4:-}
B=${B:-/tmp/evloop}; out=${OUT:-/tmp/evloop/prof}; mkdir -p $out
d=$(mktemp -d /tmp/prof-XXXX)
EV=task-clock,context-switches,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_getpid,syscalls:sys_enter_tgkill
rm -f $out/$name.marks; echo "t0 $(date +%s.%N)" > $out/$name.marks
perf stat -I 1000 -x, -e $EV -o $out/$name.perf -- env $extra $bin serve --images no --appendfsync everysec --dir $d/data --addr 127.0.0.1:9191 --http 127.0.0.1:8191 > $d/out 2> $d/log &
pp=$!
sleep 0.5; srv=$(pgrep -P $pp)
trap 'kill $srv 2>/dev/null; wait $pp 2>/dev/null; rm -rf $d' EXIT
for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
for w in "50 1" "512 1"; do set -- $w
$B/lsmgo-bench --mode=client --addr=127.0.0.1:$port --concurrency $1 --pipeline $2 --duration 12s --ratio 50:50 --key-size 32 --value-size 128 --progress=off > $out/$name-c$1.bench 2>&1 &
lp=$!
sleep 2
echo "mark c$1 start $(date +%s.%N) $(redis-cli -p $port info stats | grep total_commands_processed | tr -d '\r' | cut -d: -f2)" >> $out/$name.marks
curl -s -o $out/$name-c$1.allocs "http://127.0.0.1:8191/debug/pprof/allocs?seconds=2" &
curl -s -o $out/$name-c$1.pprof "http://127.0.0.1:8191/debug/pprof/profile?seconds=6"
echo "mark c$1 end $(date +%s.%N) $(redis-cli -p $port info stats | grep total_commands_processed | tr -d '\r' | cut -d: -f2)" >> $out/$name.marks
wait $lp
echo "$name c$1 $(grep ^getset $out/$name-c$1.bench)"
done
kill $srv; wait $pp
