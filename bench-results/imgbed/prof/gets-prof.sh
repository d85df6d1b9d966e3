#!/bin/bash
# prof.sh BINARY OUTDIR: profile thumb and o72 GETs at -c50 on ports 7601/7602
set -u
bin=$1; out=$2; mkdir -p $out
D=$(mktemp -d /tmp/s22/prof-XXXX)
$bin serve --dir $D/data --addr 127.0.0.1:7602 --http 127.0.0.1:7601 --images-upload-rate -1 --admin-token bench > $D/out 2> $D/log &
srv=$!
trap 'kill $srv; wait $srv; rm -rf $D' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:7601/healthz" && break; sleep 0.1; done
o72=$(curl -s --data-binary @/tmp/s22/o72.jpg -H 'Content-Type: image/jpeg' http://127.0.0.1:7601/api/v1/upload | sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p')
t="${o72/\/i\//\/t\/}?w=256"
curl -s -o /dev/null "http://127.0.0.1:7601$t"
for name in thumb o72; do
  p=$o72; [ $name = thumb ] && p=$t
  wrk -t2 -c50 -d12s "http://127.0.0.1:7601$p" > $out/$name.wrk.txt 2>&1 &
  lp=$!
  sleep 1
  curl -s -H 'Authorization: Bearer bench' -o $out/$name.pprof "http://127.0.0.1:7601/debug/pprof/profile?seconds=10"
  wait $lp
  grep Requests/sec $out/$name.wrk.txt
  go tool pprof -top -nodecount=40 $bin $out/$name.pprof > $out/$name.top.txt 2>/dev/null
  go tool pprof -top -cum -nodecount=60 $bin $out/$name.pprof > $out/$name.cum.txt 2>/dev/null
done
