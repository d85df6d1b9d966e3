#!/bin/bash
# Unique uploads of 100 KB, 1 MB and 4 MB JPEGs (mkjpeg.go) at -c 50 with
# lsmgo-bench --mode=http, to two lsmgo serve builds (before and after a
# change) and to the reference handler (lsmgo-bench --mode=http-reference:
# hash + own file + fsync), on loopback (issue 22, part 6). Every
# measurement starts a fresh server in an empty directory; the servers of
# a row alternate, in reverse order every other round.
#
# Usage: BEFORE=lsmgo-binary AFTER=lsmgo-binary BENCH=lsmgo-bench-binary uploads.sh OUTDIR
#        (ROUNDS=3, SECS=10, FILES="u100k u1m u4m", PORT=18281: the HTTP
#        port; PORT+10 is lsmgo's RESP port; JPEGS=DIR: take u100k.jpg,
#        u1m.jpg and u4m.jpg from DIR instead of making them first)
set -u
out=$(realpath -m "${1:?usage: uploads.sh OUTDIR}"); mkdir -p "$out"
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; FILES=${FILES:-u100k u1m u4m}; PORT=${PORT:-18281}
BEFORE=${BEFORE:?}; AFTER=${AFTER:?}; BENCH=${BENCH:?}
repo=$(cd "$(dirname "$0")/../.." && pwd)
B=$(mktemp -d /tmp/imgups-XXXX); HTTP=127.0.0.1:$PORT; srv=""
stop() { [ -n "$srv" ] && { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }; srv=""; rm -rf "$B/srv"; }
trap 'stop; rm -rf "$B"' EXIT
if [ -n "${JPEGS:-}" ]; then cp "$JPEGS"/u100k.jpg "$JPEGS"/u1m.jpg "$JPEGS"/u4m.jpg "$B"/ || exit 1; else
  (cd "$repo/bench-results/imgbed" && go run mkjpeg.go "$B/u100k.jpg" && go run mkjpeg.go "$B/u1m.jpg" 2000 1600 &&
    go run mkjpeg.go "$B/u4m.jpg" 4096 3100) || exit 1
fi
ls -l "$B"/*.jpg | awk '{print $5, $9}' | tee "$out/files.txt"
wait_http() { for _ in $(seq 100); do curl -s -o /dev/null "http://$HTTP$1" && return 0; sleep 0.1; done; return 1; }
start() { # SERVER
  mkdir -p "$B/srv"
  case $1 in
    reference) mkdir "$B/srv/files"; "$BENCH" --mode=http-reference --addr $HTTP --dir "$B/srv/files" > "$B/srv/out" 2>&1 & srv=$!; wait_http / ;;
    *) local bin=$BEFORE; [ "$1" = after ] && bin=$AFTER
       "$bin" serve --dir "$B/srv/data" --addr 127.0.0.1:$((PORT + 10)) --http $HTTP --images-upload-rate -1 --admin-token bench > "$B/srv/out" 2>&1 &
       srv=$!; wait_http /healthz ;;
  esac
}
[ -f "$out/summary.tsv" ] || printf 'round\tfile\tserver\treqs_per_s\tp99_ms\tok\terrors\tserver_cpu_us_per_req\tload1\n' > "$out/summary.tsv"
for round in $(seq "$ROUNDS"); do
  order="reference before after"; [ $((round % 2)) = 0 ] && order="after before reference"
  for file in $FILES; do
    for s in $order; do
      f="$out/r$round-$file-$s"
      start "$s" || { echo "$s did not start" >&2; stop; continue; }
      "$BENCH" --mode=http --target "http://$HTTP" --name "$s" --workloads upload --connections 50 --duration "${SECS}s" \
        --file "$B/$file.jpg" --server-pid "$srv" --progress=off --out "$f" > "$f.txt" 2>&1
      err=0; grep -q '"error":' "$f/results.json" 2>/dev/null && err=$(grep -o '"error": *"[^"]*' "$f/results.json" | head -1 | cut -c1-60)
      awk -F, 'NR == 2 {printf "%.0f\t%.1f\t%s\t%.0f\n", $8, $11/1e6, $6, ($6 > 0 ? $15*1e6/$6 : 0)}' "$f/results.csv" |
        { IFS=$'\t' read -r rps p99 ops cpu; printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$file" "$s" "$rps" "$p99" "$ops" "$err" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)"; } | tee -a "$out/summary.tsv"
      stop
    done
  done
done
