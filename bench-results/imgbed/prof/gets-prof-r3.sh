#!/bin/bash
# prof.sh BINARY OUTDIR: profile thumb and o72 GETs at -c50 on ports 7501/7502
set -u
bin=$1; out=$2; mkdir -p $out
D=$(mktemp -d /tmp/s22p/prof-XXXX)
$bin serve --dir $D/data --addr 127.0.0.1:7502 --http 127.0.0.1:7501 --images-upload-rate -1 --admin-token bench > $D/out 2> $D/log &
srv=$!
trap 'kill $srv; wait $srv; rm -rf $D' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:7501/healthz" && break; sleep 0.1; done
o72=$(curl -s --data-binary @/tmp/s22p/o72.jpg -H 'Content-Type: image/jpeg' http://127.0.0.1:7501/api/v1/upload | sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p')
t="${o72/\/i\//\/t\/}?w=256"
curl -s -o /dev/null "http://127.0.0.1:7501$t"
for name in ${NAMES:-thumb o72}; do
  p=$o72; [ $name = thumb ] && p=$t
  wrk -t2 -c50 -d12s "http://127.0.0.1:7501$p" > $out/$name.wrk.txt 2>&1 &
  lp=$!
  sleep 1
  if [ -n "${PERF:-}" ]; then
    perf record -g -p $srv -o $out/$name.perf.data -- sleep 8 2>/dev/null >/dev/null
    perf report -i $out/$name.perf.data --no-children --sort sym --stdio 2>/dev/null | grep -v '^$' | head -120 > $out/$name.perf.txt
  else
    curl -s -H 'Authorization: Bearer bench' -o $out/$name.pprof "http://127.0.0.1:7501/debug/pprof/profile?seconds=10"
  fi
  wait $lp
  grep Requests/sec $out/$name.wrk.txt
  [ -z "${PERF:-}" ] && go tool pprof -top -nodecount=50 $bin $out/$name.pprof > $out/$name.top.txt 2>/dev/null
  [ -z "${PERF:-}" ] && go tool pprof -top -cum -nodecount=80 $bin $out/$name.pprof > $out/$name.cum.txt 2>/dev/null
done
