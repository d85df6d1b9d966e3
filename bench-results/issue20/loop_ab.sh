#!/usr/bin/env bash
# Server CPU per request, requests/s and system calls per request batch
# of two lsmgo builds (A, B) and redis-server 7 under redis-benchmark,
# -c 50, alternated (the order rotates every round). CPU from
# /proc/PID/stat (utime+stime) around each run; system calls and context
# switches from perf stat's tracepoints on the server process, per batch
# (requests ÷ P). N1 and N16 set the requests per run at -P 1 and at
# -P 16 (default 20000 and 200000); PERF=0 skips perf stat (its syscall
# tracepoints cost the server CPU; the syscall columns are then empty).
# B_ARGS are extra serve flags for B (the same binary with the event loop).
#   [N1=… N16=… PERF=0 B_ARGS='-event-loop yes'] loop_ab.sh OUT.csv A_BINARY B_BINARY [ROUNDS] [TESTS] [PS]
set -u
out=${1:?usage}; echo "round,who,test,P,rps,cpu_us_per_req,reads_per_batch,writes_per_batch,cs_per_batch,nanosleep_per_batch,futex_per_batch" > $out
a=${2:?A binary}; b=${3:?B binary}
rounds=${4:-3}; tests=${5:-get,set,lpush,hset}; Ps=${6:-1 16}
base=${PORT_BASE:-7310}
d=$(mktemp -d)
$a serve -addr 127.0.0.1:$((base+1)) -http '' -dir $d/a -appendfsync everysec >$d/a.log 2>&1 & ap=$!
$b serve -addr 127.0.0.1:$((base+2)) -http '' -dir $d/b -appendfsync everysec ${B_ARGS:-} >$d/b.log 2>&1 & bp=$!
redis-server --port $((base+3)) --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir $d >$d/r.log 2>&1 & rp=$!
sleep 2
tick=$(getconf CLK_TCK)
ev=context-switches,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex
cpu() { awk -v t=$tick '{print ($14+$15)/t}' /proc/$1/stat; }
run() { # who port pid test P
  local n=$(($5 == 1 ? ${N1:-20000} : ${N16:-200000})) c0 c1 line
  local stat="perf stat -x, -e $ev -p $3 -o $d/stat --"
  [ "${PERF:-1}" = 0 ] && { stat=; : > $d/stat; }
  c0=$(cpu $3)
  line=$($stat timeout 120 redis-benchmark -h 127.0.0.1 -p $2 -c 50 -n $n -P $5 -r 100000 -t $4 --csv 2>/dev/null | tail -n +2 | head -1 | tr -d '"')
  c1=$(cpu $3)
  local b=$((n / $5))
  local sc=$(awk -F, -v b=$b '/context-switches/{cs=$1} /sys_enter_read/{r=$1} /sys_enter_write/{w=$1} /nanosleep/{ns=$1} /futex/{f=$1}
    END{printf "%.2f,%.2f,%.2f,%.2f,%.2f", r/b, w/b, cs/b, ns/b, f/b}' $d/stat)
  echo "$round,$1,$4,$5,$(echo "$line" | cut -d, -f2),$(awk -v a=$c0 -v b=$c1 -v n=$n 'BEGIN{printf "%.2f", (b-a)*1e6/n}'),$sc" >> $out
}
order=("A $((base+1)) $ap" "B $((base+2)) $bp" "redis $((base+3)) $rp")
for round in $(seq 1 $rounds); do
  for t in ${tests//,/ }; do for P in $Ps; do
    for i in 0 1 2; do
      set -- ${order[$(((i + round) % 3))]}
      run $1 $2 $3 $t $P
    done
  done; done
done
kill $ap $bp $rp; wait $ap $bp $rp 2>/dev/null; rm -rf $d
