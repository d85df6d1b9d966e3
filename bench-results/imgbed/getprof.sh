#!/bin/bash
# CPU profiles of lsmgo serve answering the GET rows of gets.sh (a 72 KB
# original, its stored 256-pixel thumbnail, a 4 MB original; wrk at the
# given connection counts), one row at a time: wrk runs SECS+2 seconds
# and the server's /debug/pprof/profile takes SECS of it (admin token),
# with the server's CPU time per request from /proc beside it.
#
# Usage: BIN=lsmgo-binary getprof.sh OUTDIR
#        (ROWS="thumb:2000 o72:2000 o4m:50 o4m:2000", SECS=8, PORT=18191:
#        HTTP, PORT+10: RESP)
# Reads them with: go tool pprof -top BIN OUTDIR/ROW.pprof
set -u
out=$(realpath -m "${1:?usage: getprof.sh OUTDIR}"); mkdir -p "$out"
BIN=${BIN:?the lsmgo binary}; ROWS=${ROWS:-thumb:2000 o72:2000 o4m:50 o4m:2000}; SECS=${SECS:-8}; PORT=${PORT:-18191}
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(mktemp -d /tmp/imgprof-XXXX)
srv=""
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$B"' EXIT
(cd "$repo/bench-results/imgbed" && go run mkjpeg.go "$B/o72.jpg" 544 408 && go run mkjpeg.go "$B/o4m.jpg" 4096 3100) || exit 1
"$BIN" serve --dir "$B/data" --addr 127.0.0.1:$((PORT + 10)) --http 127.0.0.1:$PORT --images-upload-rate -1 --admin-token bench > "$B/out" 2> "$B/log" &
srv=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
upload() {
  curl -s --data-binary @"$1" -H 'Content-Type: image/jpeg' "http://127.0.0.1:$PORT/api/v1/upload" |
    sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p'
}
declare -A path=([o72]=$(upload "$B/o72.jpg") [o4m]=$(upload "$B/o4m.jpg"))
path[thumb]="${path[o72]/\/i\//\/t\/}?w=256"
curl -s -o /dev/null "http://127.0.0.1:$PORT${path[thumb]}" # renders and stores it
ticks() { awk '{print $14+$15}' "/proc/$srv/stat"; }
for row in $ROWS; do
  file=${row%:*} c=${row#*:} name=${row/:/-c}
  t0=$(ticks)
  wrk -t2 -c"$c" -d"$((SECS + 2))s" --timeout 30s --latency "http://127.0.0.1:$PORT${path[$file]}" > "$out/$name.wrk.txt" 2>&1 &
  lp=$!
  sleep 1
  curl -s -H 'Authorization: Bearer bench' -o "$out/$name.pprof" "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=$SECS"
  wait $lp
  t1=$(ticks); total=$(awk '/requests in/ {print $1}' "$out/$name.wrk.txt")
  {
    echo "== $name: $(awk '/Requests\/sec/ {print $2}' "$out/$name.wrk.txt") req/s, $(( (t1 - t0) * 10000 / (total > 0 ? total : 1) )) µs CPU/req, load $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$repo/server" && go tool pprof -top -nodecount=40 "$BIN" "$out/$name.pprof" 2>/dev/null)
  } | tee "$out/$name.top.txt" | head -30
done
