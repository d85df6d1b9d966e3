#!/bin/bash
# CPU profiles of lsmgo serve's image host under the loads of run.sh:
# unique uploads at -c 50 (lsmgo-bench --mode=http) and GETs of one
# original at -c 50 (wrk), 10 s each, from /debug/pprof/ with the admin
# token. Reads them with: go tool pprof -top OUTDIR/NAME.pprof
# Usage: prof.sh OUTDIR
set -u
out=$(realpath -m "${1:?usage: prof.sh OUTDIR}"); mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd)
HTTP=127.0.0.1:18080
B=$(mktemp -d /tmp/imgprof-XXXX)
srv=""
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$B"' EXIT
(cd "$repo" && go build -o "$B/lsmgo" ./server/cmd/lsmgo && go build -o "$B/lsmgo-bench" ./bench/cmd/lsmgo-bench) || exit 1
(cd "$repo/bench-results/imgbed" && go run mkjpeg.go "$B/img.jpg") || exit 1
"$B/lsmgo" serve --dir "$B/data" --addr 127.0.0.1:19001 --http $HTTP --images-upload-rate -1 --admin-token bench > "$B/out" 2> "$B/log" &
srv=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://$HTTP/healthz" && break; sleep 0.1; done

# prof NAME LOAD...: profile 10 s of the server while LOAD runs.
prof() {
  local name=$1; shift
  "$@" > "$out/$name.load.txt" 2>&1 &
  local lp=$!
  sleep 1
  curl -s -H 'Authorization: Bearer bench' -o "$out/$name.pprof" "http://$HTTP/debug/pprof/profile?seconds=10"
  kill $lp 2>/dev/null; wait $lp 2>/dev/null
  echo "== $name, load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd "$repo" && go tool pprof -top -nodecount=35 "$B/lsmgo" "$out/$name.pprof" 2>/dev/null) | tee "$out/$name.top.txt" | head -45
}
prof upload-c50 "$B/lsmgo-bench" --mode=http --target "http://$HTTP" --workloads upload --connections 50 --duration 15s --file "$B/img.jpg" --progress=off
path=$(curl -s --data-binary @"$B/img.jpg" -H 'Content-Type: image/jpeg' "http://$HTTP/api/v1/upload" |
  sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p')
prof get-c50 wrk -t2 -c50 -d15s "http://$HTTP$path"
curl -s -H 'Authorization: Bearer bench' -o "$out/heap.pprof" "http://$HTTP/debug/pprof/heap"
