#!/bin/bash
# 10 s CPU profiles of an lsmgo primary and of one of its two replicas
# under redis-benchmark -t TEST -c 50 -P DEPTH, taken at the same time.
# From the repository root, after go build -o /tmp/lsmgo ./server/cmd/lsmgo.
# Usage: [BASE=17330] [TEST=set] [DEPTH=1] [BIN=/tmp/lsmgo] profile.sh OUTDIR
# Ports BASE..BASE+2 (RESP), BASE+60, BASE+61 (HTTP, pprof).
set -u
out=${1:-/tmp}; base=${BASE:-17330}; test=${TEST:-set}; depth=${DEPTH:-1}; bin=${BIN:-/tmp/lsmgo}
mkdir -p "$out"
w=$(mktemp -d /tmp/replprof-XXXX); pids=()
"$bin" serve --dir $w/p --addr 127.0.0.1:$base --http 127.0.0.1:$((base+60)) --admin-token tok --appendfsync everysec --loglevel warning >$w/p.log 2>&1 & pids+=($!)
sleep 1
for i in 1 2; do
	http=""; [ $i = 1 ] && http=127.0.0.1:$((base+61))
	"$bin" serve --dir $w/r$i --addr 127.0.0.1:$((base+i)) --http "$http" --admin-token tok --appendfsync everysec --loglevel warning --replicaof "127.0.0.1 $base" >$w/r$i.log 2>&1 & pids+=($!)
done
sleep 2
redis-cli -p $((base+1)) INFO replication | grep link_status
timeout 60 redis-benchmark -p $base -t "$test" -n 2000000 -c 50 -P "$depth" -r 100000 -q >$w/bench.txt 2>&1 & b=$!
sleep 3
curl -s -H "Authorization: Bearer tok" -o "$out/primary.pprof" "http://127.0.0.1:$((base+60))/debug/pprof/profile?seconds=10" &
c=$!
curl -s -H "Authorization: Bearer tok" -o "$out/replica.pprof" "http://127.0.0.1:$((base+61))/debug/pprof/profile?seconds=10"
wait $c
kill $b 2>/dev/null; wait $b
tr '\r' '\n' <$w/bench.txt | tail -2
for p in "${pids[@]}"; do kill $p; done; for p in "${pids[@]}"; do wait $p; done
rm -rf $w
for r in primary replica; do
	echo "== $r"
	go tool pprof -top -nodecount=30 "$bin" "$out/$r.pprof" 2>/dev/null | head -40 | tee "$out/profile-$r-$test-P$depth.txt"
done
