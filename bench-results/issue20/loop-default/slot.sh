#!/usr/bin/env bash
# One quiet slot's measurement of `event-loop` no (A) against yes (B), one
# lsmgo binary, and redis-server 7 (appendonly yes, appendfsync
# everysec): loop_ab.sh's 3 alternated rounds, then single rounds while
# the slot lasts (END, a `date +%s` bound), with /proc/loadavg and
# `uptime` before and after each.
#   END=$(date -d 00:29:00 +%s) slot.sh OUTDIR LSMGO_BIN
set -u
out=${1:?outdir}; bin=${2:?lsmgo}; end=${END:?}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p $out
export PORT_BASE=${PORT_BASE:-7410} B_ARGS='-event-loop yes'
uptime >> $out/loadavg.txt
$here/loop_ab.sh $out/ab-r1-3.csv $bin $bin 3 get,set,lpush,hset "1 16"
uptime >> $out/loadavg.txt
r=4
while [ $(date +%s) -lt $((end - 100)) ]; do
  $here/loop_ab.sh $out/ab-r$r.csv $bin $bin 1 get,set,lpush,hset "1 16"
  sed -i "s/^1,/$r,/" $out/ab-r$r.csv
  uptime >> $out/loadavg.txt
  r=$((r + 1))
done
