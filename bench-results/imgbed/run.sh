#!/bin/bash
# The image host benchmark of bench-results/history/imgbed.md: uploads of a
# ~100 KB JPEG to lsmgo serve and to the reference handler (hash + own
# file + fsync; lsmgo-bench --mode=http-reference), and GETs of that
# original from lsmgo serve and from Debian's nginx, with hey, wrk and
# lsmgo-bench --mode=http, at 50 and 2000 connections, on loopback. Every
# measurement starts a fresh server in an empty temp dir and stops it
# after; the servers alternate, in reverse order every other round.
#
# Usage: run.sh OUTDIR            (ROUNDS=3, the other knobs below)
# Needs: go, hey, wrk, nginx, curl (Debian: apt-get install hey wrk nginx curl).
# Writes OUTDIR/summary.tsv (one line per measurement), OUTDIR/ranges.txt
# (each row's figures over the rounds), and every tool's own output.
set -u
out=$(realpath -m "${1:?usage: run.sh OUTDIR}"); mkdir -p "$out"
ROUNDS=${ROUNDS:-3}
N_UP50=${N_UP50:-3000}        # uploads per row at -c 50
N_UP2000=${N_UP2000:-8000}    # uploads per row at -c 2000 (4 per connection)
N_GET=${N_GET:-10000}         # lsmgo-bench GETs per row
UPLOADS=${UPLOADS:-yes}       # no: GET rows only
GETS=${GETS:-yes}             # no: upload rows only (for a FSYNC=always run)
GET_SECS=${GET_SECS:-5}       # wrk seconds per row
FSYNC=${FSYNC:-everysec}      # lsmgo serve's appendfsync (its default)
HTTP=127.0.0.1:18080          # every server listens here in turn
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(mktemp -d /tmp/imgbench-XXXX)
srvpid=""; d=""

stop() {
  if [ -n "$srvpid" ]; then kill "$srvpid" 2>/dev/null; wait "$srvpid" 2>/dev/null; fi
  srvpid=""
  [ -n "$d" ] && rm -rf "$d"; d=""
}
trap 'stop; rm -rf "$B"' EXIT

# Build, make the image, name the machine.
(cd "$repo" && go build -o "$B/lsmgo" ./server/cmd/lsmgo && go build -o "$B/lsmgo-bench" ./bench/cmd/lsmgo-bench) || exit 1
(cd "$repo/bench-results/imgbed" && go run mkjpeg.go "$B/img.jpg") || exit 1
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "kernel: $(uname -r)"
  echo "syscalls: $(cd "$repo/bench-results" && go run syscost.go)"
  echo "go: $(go version)"; echo "nginx: $(nginx -v 2>&1)"; echo "wrk: $(wrk --version 2>&1 | head -1)"
  echo "image: $(stat -c %s "$B/img.jpg") bytes"; echo "commit: $(cd "$repo" && git rev-parse --short HEAD)"
} | tee "$out/machine.txt"

wait_http() {
  for _ in $(seq 100); do curl -s -o /dev/null "http://$HTTP$1" && return 0; sleep 0.1; done
  echo "nothing answers at $HTTP" >&2; return 1
}
start_lsmgo() {
  d=$(mktemp -d /tmp/imgbench-srv-XXXX)
  "$B/lsmgo" serve --dir "$d/data" --addr 127.0.0.1:19001 --http $HTTP --appendfsync "$FSYNC" \
    --images-upload-rate -1 --admin-token bench > "$d/out" 2> "$d/log" &
  srvpid=$!; wait_http /healthz
}
start_reference() {
  d=$(mktemp -d /tmp/imgbench-srv-XXXX); mkdir "$d/files"
  "$B/lsmgo-bench" --mode=http-reference --addr $HTTP --dir "$d/files" > "$d/out" 2>&1 &
  srvpid=$!; wait_http /
}
start_nginx() {
  d=$(mktemp -d /tmp/imgbench-srv-XXXX); chmod 755 "$d"; mkdir "$d/root" "$d/logs"
  cp "$B/img.jpg" "$d/root/img.jpg"; chmod -R a+rX "$d/root"
  # Debian's defaults where they matter (sendfile, one worker per core),
  # no access log (lsmgo serve keeps none), keep-alive as long as Go's.
  cat > "$d/nginx.conf" <<EOF
daemon off;
worker_processes auto;
worker_rlimit_nofile 20000;
pid $d/nginx.pid;
error_log $d/logs/error.log;
events { worker_connections 8192; }
http {
  include /etc/nginx/mime.types;
  sendfile on; tcp_nopush on;
  access_log off;
  keepalive_requests 1000000;
  server { listen $HTTP; root $d/root; }
}
EOF
  nginx -c "$d/nginx.conf" -p "$d/" &
  srvpid=$!; wait_http /img.jpg
}
# The image's path on the running server, uploaded once for GET rows.
image_path() {
  case $1 in
    nginx) echo /img.jpg ;;
    *) curl -s --data-binary @"$B/img.jpg" -H 'Content-Type: image/jpeg' "http://$HTTP/api/v1/upload" |
         sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p' ;;
  esac
}

# cpu_ticks PID: user+system time in 1/100 s of the process and its
# children (nginx's workers).
cpu_ticks() {
  local t=0 p
  for p in "$1" $(pgrep -P "$1"); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo $t
}

# record TOOL WORKLOAD SERVER CONNS REQS/S P99_MS OK ERRORS CPU_US_PER_REQ
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$@" | tee -a "$out/summary.tsv"; }

# One measurement: start SERVER fresh, run TOOL's WORKLOAD at CONNS, stop.
measure() {
  local tool=$1 workload=$2 server=$3 conns=$4
  local f="$out/r$round-$tool-$workload-$server-c$conns.txt"
  start_$server || { record "$tool" "$workload" "$server" "$conns" 0 0 0 start-failed 0; stop; return; }
  local path=""; [ "$workload" = get ] && path=$(image_path "$server")
  local n=$N_GET; [ "$workload" = upload ] && { n=$N_UP50; [ "$conns" = 2000 ] && n=$N_UP2000; }
  local t0; t0=$(cpu_ticks $srvpid)
  case $tool in
    hey)
      hey -n "$n" -c "$conns" -t 60 -m POST -T image/jpeg -D "$B/img.jpg" "http://$HTTP/api/v1/upload" > "$f" 2>&1
      local t1; t1=$(cpu_ticks $srvpid)
      local rps p99 ok
      rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$f")
      p99=$(awk '/ 99% in/ {printf "%.1f", $3*1000}' "$f")
      ok=$(awk '/\[20[01]\]/ {s+=$2} END {print s+0}' "$f")
      record hey upload "$server" "$conns" "$rps" "$p99" "$ok" "$((n - ok))" "$(( (t1 - t0) * 10000 / (ok > 0 ? ok : 1) ))" ;;
    wrk)
      # wrk's default 2 s timeout drops (and leaves out of its latency
      # figures) requests that wait longer, which at 2000 connections
      # is the mean wait itself.
      wrk -t2 -c"$conns" -d"${GET_SECS}s" --timeout 30s --latency "http://$HTTP$path" > "$f" 2>&1
      local t1; t1=$(cpu_ticks $srvpid)
      local rps p99 total errs
      rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$f")
      p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) m=0.001; else if (v ~ /ms$/) m=1; else m=1000; sub(/[a-z]+$/, "", v); printf "%.1f", v*m}' "$f")
      total=$(awk '/requests in/ {print $1}' "$f")
      errs=$(awk '/Non-2xx|Socket errors/ {print}' "$f" | tr '\n' ' ')
      record wrk get "$server" "$conns" "$rps" "$p99" "$total" "${errs:-0}" "$(( (t1 - t0) * 10000 / (total > 0 ? total : 1) ))" ;;
    bench)
      "$B/lsmgo-bench" --mode=http --target "http://$HTTP" --name "$server" --workloads "$workload" --connections "$conns" \
        --requests "$n" --images 100 --file "$B/img.jpg" --server-pid "$srvpid" --progress=off --out "${f%.txt}" > "$f" 2>&1
      # ops/s, p99 and cpu/op from the first columns of results.csv
      # (the note, which may hold commas, comes later); errors from
      # results.json, which has "error" only in a failed row.
      local err=0; grep -q '"error":' "${f%.txt}/results.json" 2>/dev/null && err=error
      awk -F, 'NR == 2 {printf "%.0f\t%.1f\t%s\t%.0f\n", $8, $11/1e6, $6, ($6 > 0 ? $15*1e6/$6 : 0)}' "${f%.txt}/results.csv" |
        { IFS=$'\t' read -r rps p99 ops cpu; record bench "$workload" "$server" "$conns" "$rps" "$p99" "$ops" "$err" "$cpu"; } ;;
  esac
  stop
}

[ -f "$out/summary.tsv" ] || printf 'round\ttool\tworkload\tserver\tconns\treqs_per_s\tp99_ms\tok\terrors\tserver_cpu_us_per_req\n' > "$out/summary.tsv"
for round in $(seq "$ROUNDS"); do
  echo "== round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
  up="reference lsmgo"; get="nginx lsmgo"
  [ $((round % 2)) = 0 ] && { up="lsmgo reference"; get="lsmgo nginx"; }
  for c in 50 2000; do
    if [ "$UPLOADS" = yes ]; then
      for s in $up; do measure bench upload "$s" $c; done
      for s in $up; do measure hey upload "$s" $c; done
    fi
    [ "$GETS" = yes ] || continue
    for s in $get; do measure wrk get "$s" $c; done
    measure bench get lsmgo $c
  done
done

# Every round's reqs/s, p99 and server CPU per request, per (tool,
# workload, server, conns), for the ranges of bench-results/history/imgbed.md.
awk -F'\t' 'NR > 1 {k = $2 " " $3 " " $4 " c" $5; r[k] = r[k] " " $6; p[k] = p[k] " " $7; c[k] = c[k] " " $10}
  END {for (k in r) print k ":  req/s" r[k] "   p99 ms" p[k] "   server cpu us/req" c[k]}' "$out/summary.tsv" | sort | tee "$out/ranges.txt"
