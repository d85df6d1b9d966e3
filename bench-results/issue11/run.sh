#!/bin/bash
# usage: run.sh ROUND   (odd: before->after, even: after->before)
set -u
M=/tmp/meas11; r=$1
if [ $((r % 2)) = 1 ]; then order="before after"; sorder="redis before after"; else order="after before"; sorder="after before redis"; fi
log=$M/r$r.log
echo "=== round $r start $(date -u +%T) load=$(cut -d' ' -f1-3 /proc/loadavg)" >>$log
# engine
for v in ${ENGINE_SIDES-$order}; do
  if [ $v = before ]; then wl=fillrandom,readrandom,readwhilewriting,mixed:4; en=lsmgo
  else wl=fillrandom,readrandom,readwhilewriting,mixed:4,ycsb-c; en=lsmgo,pebble,bbolt; fi
  cmd="$M/$v/lsmgo-bench --mode=engine --num=${NUM:-1000000} --workloads=$wl --engines=$en --progress=off --out=$M/r$r-$v-engine"
  echo "r$r engine $v start $(date -u +%T) load=$(cut -d' ' -f1 /proc/loadavg): $cmd" >>$log
  s=$(date +%s); timeout 900 $cmd > $M/r$r-$v-engine.txt 2>&1; echo "r$r engine $v rc=$? took $(( $(date +%s)-s ))s" >>$log
done
# server
for v in $sorder; do
  d=$(mktemp -d /tmp/meas11/srv-XXXX)
  if [ $v = redis ]; then
    redis-server --port 7390 --bind 127.0.0.1 --appendonly yes --appendfsync everysec --save '' --dir $d --daemonize no --logfile $d/log >/dev/null 2>&1 &
    pid=$!; port=7390
  else
    $M/$v/lsmgo serve --appendfsync everysec --dir $d/data --addr 127.0.0.1:7391 --http 127.0.0.1:7392 >$d/out 2>$d/log &
    pid=$!; port=7391
  fi
  for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  for w in 50:1 512:1 50:16; do
    c=${w%:*}; p=${w#*:}
    o=$M/r$r-srv-$v-c$c-P$p
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    $M/after/lsmgo-bench --mode=client --addr=127.0.0.1:$port --concurrency $c --pipeline $p --duration 8s --ratio 50:50 --key-size 32 --value-size 128 --progress=off --out $o > $o.txt 2>&1
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    echo "r$r srv $v c$c P$p load=$(cut -d' ' -f1 /proc/loadavg) srvticks=$((t1-t0)) $(grep -E '^getset' $o.txt)" >>$log
  done
  rss=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
  echo "r$r srv $v peakRSS_kB=$rss" >>$log
  kill $pid || echo "SERVER $v DIED" >>$log; wait $pid 2>/dev/null
  cp $d/log $M/r$r-srv-$v.serverlog 2>/dev/null; rm -rf $d
done
echo "=== round $r end $(date -u +%T)" >>$log
