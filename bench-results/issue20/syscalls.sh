#!/usr/bin/env bash
# System calls and context switches per request batch (per request at
# -P 1) of lsmgo serve and redis-server 7 under redis-benchmark GET and
# LPUSH, -c 50, -P 1 and -P 16: perf stat's syscall tracepoints on the
# server process, divided by the number of batches (requests ÷ P).
#   syscalls.sh LSMGO_BINARY > syscalls.txt
set -u
bin=${1:?lsmgo binary}
d=$(mktemp -d)
$bin serve -addr 127.0.0.1:7312 -http '' -dir $d/l -appendfsync everysec >$d/l.log 2>&1 & lp=$!
redis-server --port 7313 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d >$d/r.log 2>&1 & rp=$!
sleep 2
ev=context-switches
for s in read write futex nanosleep epoll_pwait epoll_wait sched_yield; do ev=$ev,syscalls:sys_enter_$s; done
for srv in lsmgo:7312:$lp redis:7313:$rp; do
  IFS=: read who port pid <<<"$srv"
  for t in get lpush; do for P in 1 16; do
    n=$((P==1 ? 10000 : 50000))
    perf stat -e $ev -p $pid -o $d/stat -- timeout 100 redis-benchmark -p $port -c 50 -n $n -P $P -r 100000 -t $t -q >/dev/null 2>&1
    echo "$who $t P$P n=$n $(grep -E 'sys_enter|context' $d/stat |
      awk -v b=$((n / P)) '{gsub(",", "", $1); sub("syscalls:sys_enter_", "", $2); printf "%s=%.2f ", $2, $1 / b}')"
  done; done
done
kill $lp $rp; wait $lp $rp 2>/dev/null; rm -rf $d
