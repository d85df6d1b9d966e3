#!/bin/bash
# uprof.sh BINARY OUTDIR: profile 4 MB unique uploads at -c 4
set -u
bin=$1; out=$2; mkdir -p $out
D=$(mktemp -d /tmp/s22/uprof-XXXX)
$bin serve --dir $D/data --addr 127.0.0.1:7622 --http 127.0.0.1:7621 --images-upload-rate -1 --admin-token bench > $D/out 2> $D/log &
srv=$!
trap 'kill $srv; wait $srv; rm -rf $D' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:7621/healthz" && break; sleep 0.1; done
/tmp/s22/lsmgo-bench --mode=http --target http://127.0.0.1:7621 --workloads upload --connections 4 --duration 14s --file /tmp/s22/u4m.jpg --server-pid $srv --progress=off --out $out/bench > $out/bench.txt 2>&1 &
lp=$!
sleep 2
curl -s -H 'Authorization: Bearer bench' -o $out/up.pprof "http://127.0.0.1:7621/debug/pprof/profile?seconds=10"
wait $lp
cat $out/bench/results.csv | cut -d, -f1-16
go tool pprof -top -nodecount=40 $bin $out/up.pprof > $out/up.top.txt 2>/dev/null
go tool pprof -top -cum -nodecount=80 $bin $out/up.pprof > $out/up.cum.txt 2>/dev/null
