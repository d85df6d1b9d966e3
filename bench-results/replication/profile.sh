#!/bin/bash
# One 10 s CPU profile of an lsmgo primary with two replicas under redis-benchmark SET -P 1.
# From the repository root, after go build -o /tmp/lsmgo ./server/cmd/lsmgo. Ports 17330-17332, 17390.
set -u
w=$(mktemp -d /tmp/replprof-XXXX); pids=()
/tmp/lsmgo serve --dir $w/p --addr 127.0.0.1:17330 --http 127.0.0.1:17390 --admin-token tok --appendfsync everysec --loglevel warning >$w/p.log 2>&1 & pids+=($!)
sleep 1
for i in 1 2; do /tmp/lsmgo serve --dir $w/r$i --addr 127.0.0.1:$((17330+i)) --http "" --appendfsync everysec --loglevel warning --replicaof "127.0.0.1 17330" >$w/r$i.log 2>&1 & pids+=($!); done
sleep 2
redis-cli -p 17331 INFO replication | grep link_status
timeout 60 redis-benchmark -p 17330 -t set -n 150000 -c 50 -P 1 -r 100000 -q >$w/bench.txt 2>&1 & b=$!
sleep 4
curl -s -H "Authorization: Bearer tok" -o /tmp/replprof.pprof "http://127.0.0.1:17390/debug/pprof/profile?seconds=10"
kill $b 2>/dev/null; wait $b
cat $w/bench.txt | tr '\r' '\n' | tail -2
for p in "${pids[@]}"; do kill $p; done; for p in "${pids[@]}"; do wait $p; done
rm -rf $w
go tool pprof -top -nodecount=25 /tmp/lsmgo /tmp/replprof.pprof 2>/dev/null | head -35
