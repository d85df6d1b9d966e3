#!/usr/bin/env bash
# The measurements of the event loop (issue 20 item 5) in one quiet slot:
# main (A) against the branch with -event-loop yes (B) and redis-server,
# loop_ab.sh's alternated rounds, then perf profiles of A and B, then
# more rounds while the slot lasts (END, a `date +%s` bound).
#   END=$(date -d 18:09:30 +%s) slot.sh OUTDIR MAIN_BIN BRANCH_BIN
set -u
out=${1:?outdir}; a=${2:?main}; b=${3:?branch}; end=${END:?}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p $out
export PORT_BASE=7150 B_ARGS='-event-loop yes'
cat /proc/loadavg > $out/loadavg.txt
$here/loop_ab.sh $out/ab-r1-3.csv $a $b 3 get,set,lpush,hset "1 16"
cat /proc/loadavg >> $out/loadavg.txt
for t in "get 1" "get 16" "lpush 16"; do
  set -- $t
  [ $(date +%s) -lt $((end - 60)) ] || break
  PORT=7160 $here/loop_profile.sh $out/prof-A-$1-P$2.txt $a $1 $2
  ARGS='-event-loop yes' PORT=7161 $here/loop_profile.sh $out/prof-B-$1-P$2.txt $b $1 $2
done
cat /proc/loadavg >> $out/loadavg.txt
r=4
while [ $(date +%s) -lt $((end - 100)) ]; do
  $here/loop_ab.sh $out/ab-r$r.csv $a $b 1 get,set,lpush,hset "1 16"
  sed -i "s/^1,/$r,/" $out/ab-r$r.csv
  r=$((r + 1))
done
cat /proc/loadavg >> $out/loadavg.txt
