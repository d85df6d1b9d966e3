#!/bin/bash
# upload-prof-r4.sh BINARY FILE CONNS OUTDIR: profile unique uploads of FILE at
# -c CONNS, server and load at nice 19 (BENCH=lsmgo-bench binary); the
# upload-r4-*.txt files here came from it (issue 22, round four)
set -u
bin=$1; file=$2; conns=$3; out=$4; mkdir -p $out
D=$(mktemp -d /tmp/uprof-XXXX)
nice -n 19 $bin serve --dir $D/data --addr 127.0.0.1:7502 --http 127.0.0.1:7501 --images-upload-rate -1 --admin-token bench > $D/out 2> $D/log &
srv=$!
trap 'kill $srv; wait $srv; rm -rf $D' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:7501/healthz" && break; sleep 0.1; done
nice -n 19 ${BENCH:-lsmgo-bench} --mode=http --target http://127.0.0.1:7501 --workloads upload --connections $conns --duration 14s --file $file --server-pid $srv --progress=off --out $out/bench > $out/bench.txt 2>&1 &
lp=$!
sleep 2
curl -s -H 'Authorization: Bearer bench' -o $out/up.pprof "http://127.0.0.1:7501/debug/pprof/profile?seconds=10"
wait $lp
cut -d, -f1-16 $out/bench/results.csv
go tool pprof -top -nodecount=45 $bin $out/up.pprof > $out/up.top.txt 2>/dev/null
go tool pprof -top -cum -nodecount=90 $bin $out/up.pprof > $out/up.cum.txt 2>/dev/null
