#!/bin/bash
set -u
# perf profiles of a primary and a new replica during a full sync of
# 4000 x 256 KiB. BIN: a directory with lsmgo and replprobe (run.sh BIN).
bin=${BIN:?}/lsmgo; base=${BASE:-7770}
w=$(mktemp -d /tmp/fsprof-XXXX)
$bin serve --dir $w/p --addr 127.0.0.1:$base --http "" --appendfsync everysec --loglevel warning >$w/p.log 2>&1 & pp=$!
sleep 1
${BIN}/replprobe -mode load -primary 127.0.0.1:$base -n 4000 -d 262144 -c 4 -P 64
sleep 2
$bin serve --dir $w/r --addr 127.0.0.1:$((base+1)) --http "" --appendfsync everysec --loglevel warning --replicaof "127.0.0.1 $base" >$w/r.log 2>&1 & rp=$!
perf record -F 999 -g -o ${OUT:-/tmp}/fsprof-r.data -p $rp 2>/dev/null & perfr=$!
perf record -F 999 -g -o ${OUT:-/tmp}/fsprof-p.data -p $pp 2>/dev/null & perfp=$!
t0=$(date +%s.%N)
for i in $(seq 1200); do redis-cli -p $((base+1)) INFO replication 2>/dev/null | grep -q link_status:up && break; sleep 0.05; done
echo "sync $(echo "$(date +%s.%N) - $t0" | bc) s"
kill -INT $perfr $perfp; wait $perfr $perfp
kill $rp $pp; wait $rp $pp
rm -rf $w
