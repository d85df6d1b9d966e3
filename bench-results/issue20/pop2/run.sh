#!/usr/bin/env bash
# s20-pop2's measurement (issue 20 item 3): main (A), the branch (B) and
# redis-server 7 (appendonly yes, appendfsync everysec) under
# redis-benchmark -c 50 -n N -r 100000, at -P 1 and -P 16. Per round and
# per P, each server runs the fill and then the pop of each type, as
# redis-benchmark's own sequence does: SADD then SPOP on myset, ZADD then
# ZPOPMIN on myzset (about 63k members each; the pops drain them and the
# last ~37k requests find the key gone). The three servers take turns in
# an order that rotates every round. Server CPU per request from
# /proc/PID/stat (utime+stime) around each run; load average logged.
#   run.sh OUT.csv A_BINARY B_BINARY [ROUNDS]
set -u
out=${1:?usage}; a=${2:?A binary}; b=${3:?B binary}; rounds=${4:-3}
n=${N:-100000}; base=${PORT_BASE:-7150}
echo "round,who,test,P,rps,cpu_us_per_req,load1" > "$out"
d=$(mktemp -d)
"$a" serve -addr 127.0.0.1:$((base+1)) -http '' -dir "$d/a" -appendfsync everysec >"$d/a.log" 2>&1 & ap=$!
"$b" serve -addr 127.0.0.1:$((base+2)) -http '' -dir "$d/b" -appendfsync everysec >"$d/b.log" 2>&1 & bp=$!
redis-server --port $((base+3)) --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir "$d" >"$d/r.log" 2>&1 & rp=$!
sleep 2
tick=$(getconf CLK_TCK)
cpu() { awk -v t=$tick '{print ($14+$15)/t}' /proc/$1/stat; }
run() { # who port pid test P
  local c0 c1 line
  c0=$(cpu $3)
  line=$(timeout 120 redis-benchmark -h 127.0.0.1 -p $2 -c 50 -n $n -P $5 -r 100000 -t $4 --csv 2>/dev/null | tail -n +2 | head -1 | tr -d '"')
  c1=$(cpu $3)
  echo "$round,$1,$4,$5,$(echo "$line" | cut -d, -f2),$(awk -v a=$c0 -v b=$c1 -v n=$n 'BEGIN{printf "%.2f", (b-a)*1e6/n}'),$(cut -d' ' -f1 /proc/loadavg)" >> "$out"
}
order=("A $((base+1)) $ap" "B $((base+2)) $bp" "redis $((base+3)) $rp")
for round in $(seq 1 "$rounds"); do
  for P in 1 16; do
    for i in 0 1 2; do
      set -- ${order[$(((i + round) % 3))]}
      for t in sadd spop zadd zpopmin; do run $1 $2 $3 $t $P; done
    done
  done
done
kill $ap $bp $rp; wait $ap $bp $rp 2>/dev/null; rm -rf "$d"
