#!/bin/bash
# GETs of originals and stored thumbnails from lsmgo serve, two builds
# side by side (before and after a change), against nginx serving the same
# bytes from disk, with wrk on loopback (issue 22, part 6). Each round
# starts the three servers fresh, uploads the images (a 72 KB and a 4 MB
# JPEG from mkjpeg.go), renders the 72 KB one's 256-pixel thumbnail once
# (a stored thumbnail after that) and copies the bytes lsmgo serves into
# nginx's root; then every row runs the three servers one after another,
# in reverse order every other round. FILES may add "mix": GETs of the
# 72 KB original where, per wrk thread (so on every connection soon), one
# request in ten asks for its first KiB (Range, which net/http answers;
# the connection comes back to the front after it only with httpfront's
# take-back, s22-gets2) and another one in ten revalidates with an
# If-None-Match that does not match (a 200 of the whole file; net/http's
# on main, the front's on s22-gets2).
#
# Usage: BEFORE=lsmgo-binary AFTER=lsmgo-binary gets.sh OUTDIR
#        (ROUNDS=3, SECS=10, CONNS="50 2000", FILES="o72 thumb o4m",
#        PORT=18181: nginx's port; the two builds take the next two for
#        HTTP and PORT+11, PORT+12 for RESP)
# Needs: wrk, nginx, curl. Writes OUTDIR/summary.tsv and wrk's outputs.
set -u
out=$(realpath -m "${1:?usage: gets.sh OUTDIR}"); mkdir -p "$out"
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; CONNS=${CONNS:-50 2000}; FILES=${FILES:-o72 thumb o4m}; PORT=${PORT:-18181}
BEFORE=${BEFORE:?the lsmgo binary before the change}; AFTER=${AFTER:?the lsmgo binary after}
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(mktemp -d /tmp/imggets-XXXX); chmod 755 "$B"
declare -A port=([nginx]=$PORT [before]=$((PORT + 1)) [after]=$((PORT + 2))) pid=()
stop_all() { for s in "${!pid[@]}"; do kill "${pid[$s]}" 2>/dev/null; wait "${pid[$s]}" 2>/dev/null; done; pid=(); }
trap 'stop_all; rm -rf "$B"' EXIT

cat > "$B/mix.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  if n % 10 == 0 then
    return wrk.format(nil, nil, {["Range"] = "bytes=0-1023"})
  elseif n % 10 == 5 then
    return wrk.format(nil, nil, {["If-None-Match"] = '"no-match"'})
  end
  return wrk.format()
end
LUA
(cd "$repo/bench-results/imgbed" && go run mkjpeg.go "$B/o72.jpg" 544 408 && go run mkjpeg.go "$B/o4m.jpg" 4096 3100) || exit 1
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "kernel: $(uname -r)"; echo "syscalls: $(cd "$repo/bench-results" && go run syscost.go)"
  echo "nginx: $(nginx -v 2>&1)"; echo "wrk: $(wrk --version 2>&1 | head -1)"
  echo "before: $BEFORE"; echo "after: $AFTER"; echo "load at start: $(cat /proc/loadavg)"
} | tee "$out/machine.txt"

wait_http() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1$2" && return 0; sleep 0.1; done; return 1; }
start_lsmgo() { # NAME BINARY
  local d="$B/$1"; mkdir -p "$d"
  "$2" serve --dir "$d/data" --addr 127.0.0.1:$((port[$1] + 10)) --http 127.0.0.1:${port[$1]} \
    --images-upload-rate -1 --admin-token bench > "$d/out" 2> "$d/log" &
  pid[$1]=$!; wait_http "${port[$1]}" /healthz
}
upload() { # PORT FILE -> path
  curl -s --data-binary @"$2" -H 'Content-Type: image/jpeg' "http://127.0.0.1:$1/api/v1/upload" |
    sed -n 's|.*"url": *"http://[^/]*\(/i/[^"]*\)".*|\1|p'
}
start_round() {
  rm -rf "${B:?}"/before "$B"/after "$B"/nginx
  start_lsmgo before "$BEFORE" && start_lsmgo after "$AFTER" || exit 1
  declare -gA path=()
  for s in before after; do
    local o72 o4m; o72=$(upload "${port[$s]}" "$B/o72.jpg"); o4m=$(upload "${port[$s]}" "$B/o4m.jpg")
    local t="${o72/\/i\//\/t\/}?w=256"
    curl -s -o "$B/t-$s.jpg" "http://127.0.0.1:${port[$s]}$t" # renders and stores it
    path[$s,o72]=$o72; path[$s,o4m]=$o4m; path[$s,thumb]=$t; path[$s,mix]=$o72
  done
  cmp -s "$B/t-before.jpg" "$B/t-after.jpg" || echo "warning: the two builds' thumbnails differ" >&2
  mkdir -p "$B/nginx/root" "$B/nginx/logs"
  cp "$B/o72.jpg" "$B/o4m.jpg" "$B/nginx/root/"; cp "$B/t-after.jpg" "$B/nginx/root/thumb.jpg"; chmod -R a+rX "$B/nginx"
  path[nginx,o72]=/o72.jpg; path[nginx,o4m]=/o4m.jpg; path[nginx,thumb]=/thumb.jpg; path[nginx,mix]=/o72.jpg
  # Debian's defaults where they matter (sendfile, one worker per core),
  # no access log (lsmgo serve keeps none), keep-alive as long as Go's.
  cat > "$B/nginx/nginx.conf" <<NGX
daemon off;
worker_processes auto;
worker_rlimit_nofile 20000;
pid $B/nginx/nginx.pid;
error_log $B/nginx/logs/error.log;
events { worker_connections 8192; }
http {
  include /etc/nginx/mime.types;
  sendfile on; tcp_nopush on;
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:${port[nginx]}; root $B/nginx/root; }
}
NGX
  nginx -c "$B/nginx/nginx.conf" -p "$B/nginx/" & pid[nginx]=$!
  wait_http "${port[nginx]}" /thumb.jpg || exit 1
  echo "sizes: o72 $(stat -c %s "$B/o72.jpg"), o4m $(stat -c %s "$B/o4m.jpg"), thumb $(stat -c %s "$B/t-after.jpg")" >> "$out/machine.txt"
}
cpu_ticks() { local t=0 p; for p in "$1" $(pgrep -P "$1"); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }

[ -f "$out/summary.tsv" ] || printf 'round\tfile\tserver\tconns\treqs_per_s\tp99_ms\trequests\terrors\tserver_cpu_us_per_req\tload1\n' > "$out/summary.tsv"
for round in $(seq "$ROUNDS"); do
  start_round
  order="nginx before after"; [ $((round % 2)) = 0 ] && order="after before nginx"
  for file in $FILES; do
    for c in $CONNS; do
      for s in $order; do
        f="$out/r$round-$file-$s-c$c.txt"
        script=(); [ "$file" = mix ] && script=(-s "$B/mix.lua")
        t0=$(cpu_ticks "${pid[$s]}")
        wrk "${script[@]}" -t2 -c"$c" -d"${SECS}s" --timeout 30s --latency "http://127.0.0.1:${port[$s]}${path[$s,$file]}" > "$f" 2>&1
        t1=$(cpu_ticks "${pid[$s]}")
        rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$f")
        p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) m=0.001; else if (v ~ /ms$/) m=1; else m=1000; sub(/[a-z]+$/, "", v); printf "%.1f", v*m}' "$f")
        total=$(awk '/requests in/ {print $1}' "$f")
        errs=$(awk '/Non-2xx|Socket errors/ {print}' "$f" | tr '\n' ' ')
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$file" "$s" "$c" "$rps" "$p99" "$total" "${errs:-0}" \
          "$(( (t1 - t0) * 10000 / (total > 0 ? total : 1) ))" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.tsv"
      done
    done
  done
  stop_all
done
