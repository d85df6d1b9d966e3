#!/bin/bash
# Resident memory of lsmgo serve while CLIENTS clients at once each
# upload a 50-megapixel PNG and HEIC image (made by Go's encoder and
# heif-enc, one unique copy per client) and fetch two renders of each:
# the 256-pixel ladder thumbnail and a 1024×1024 cover WebP (issue 22's
# target: ≤ 300 MB above idle). Each round starts a fresh server and
# samples its VmRSS every 50 ms from /proc/PID/status; idle is the RSS
# after start-up settles, peak the highest sample; VmHWM is the kernel's
# own peak at the end.
#
# Usage: rss.sh OUTDIR   (ROUNDS=3, CLIENTS=8, SIDE=7070, PORT=7600 (HTTP;
#        PORT+1 RESP), BIN=lsmgo binary (default: built from this tree),
#        CACHE=dir for the big images (default ~/.cache/lsmgo-bench),
#        PRIO="nice -n 19 ionice -c3": the priority everything runs at;
#        PRIO= for a quiet-slot run at normal priority; FORMATS="png heic",
#        each client's uploads in order, "jpg" a JPEG of the same picture
#        made by libjpeg at quality 85)
# Needs: curl, heif-enc (libheif-examples), vips (libvips-tools) for jpg. Writes OUTDIR/summary.tsv,
# OUTDIR/clients-R.tsv (each request's status and seconds) and
# OUTDIR/rss-R.tsv (the samples).
set -u
out=$(realpath -m "${1:?usage: rss.sh OUTDIR}"); mkdir -p "$out"
ROUNDS=${ROUNDS:-3}; CLIENTS=${CLIENTS:-8}; SIDE=${SIDE:-7070}; PORT=${PORT:-7600}; FORMATS=${FORMATS:-png heic}
PRIO=${PRIO-nice -n 19 ionice -c3}
CACHE=${CACHE:-$HOME/.cache/lsmgo-bench}/rss-$SIDE; mkdir -p "$CACHE"
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../../.." && pwd)
B=$(mktemp -d /tmp/imgrss-XXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$B"' EXIT

if [ -z "${BIN:-}" ]; then
  (cd "$repo/server" && $PRIO go build -o "$B/lsmgo" ./cmd/lsmgo) || exit 1
  BIN=$B/lsmgo
fi
[ -s "$CACHE/big.png" ] || (cd "$here" && $PRIO go run mkbig.go png "$CACHE/big.png" "$SIDE") || exit 1
[ -s "$CACHE/big.heic" ] || $PRIO heif-enc -q 50 -o "$CACHE/big.heic" "$CACHE/big.png" >/dev/null || exit 1
[ -s "$CACHE/big.jpg" ] || [[ " $FORMATS " != *" jpg "* ]] || $PRIO vips jpegsave "$CACHE/big.png" "$CACHE/big.jpg" --Q 85 || exit 1
for f in $FORMATS; do (cd "$here" && go run mkbig.go variants "$CACHE/big.$f" "$CLIENTS" "$B/v") || exit 1; done
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "kernel: $(uname -r); $(go version)"; echo "binary: $BIN ($(cd "$repo" && git rev-parse --short HEAD))"
  echo "images: $SIDE×$SIDE, $(for f in $FORMATS; do printf '%s %s bytes, ' "$f" "$(stat -c %s "$CACHE/big.$f")"; done)(heif-enc -q 50, vips --Q 85); $CLIENTS clients"
  echo "priority: ${PRIO:-normal}; load at start: $(cat /proc/loadavg)"
} | tee "$out/machine.txt"

rss() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
get() { # URL -> "status seconds"
  curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 600 "$1"
}
client() { # I
  local i=$1 f key
  for f in $(for x in $FORMATS; do echo "$B/v-$i.$x"; done); do
    local t0=$EPOCHREALTIME
    local resp; resp=$(curl -s --max-time 600 --data-binary @"$f" -H 'Content-Type: application/octet-stream' "http://127.0.0.1:$PORT/api/v1/upload")
    key=$(sed -n 's|.*"url": *"http://[^/]*/i/\([^."]*\)\..*|\1|p' <<< "$resp")
    echo -e "$i\tupload ${f##*.}\t$([ -n "$key" ] && echo 201 || echo "failed: ${resp:0:80}")\t$(echo "$EPOCHREALTIME - $t0" | bc)"
    [ -n "$key" ] || continue
    for q in ".png?w=256" ".webp?w=1024&h=1024&fit=cover"; do
      echo -e "$i\t${f##*.} $q\t$(get "http://127.0.0.1:$PORT/t/$key$q" | tr ' ' '\t')"
    done
  done
}

printf 'round\tidle_MiB\tpeak_MiB\tabove_idle_MiB\tVmHWM_MiB\tseconds\tthumbs_200\tthumbs_422\tother\n' > "$out/summary.tsv"
for r in $(seq "$ROUNDS"); do
  rm -rf "$B/data"
  $PRIO "$BIN" serve --dir "$B/data" --addr 127.0.0.1:$((PORT + 1)) --http 127.0.0.1:$PORT \
    --images-upload-rate -1 --images-uploads-per-client "$CLIENTS" --images-upload-queue-wait 600s \
    > "$B/out" 2> "$out/server-$r.log" &
  pid=$!
  for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
  sleep 2; idle=$(rss $pid VmRSS)
  : > "$out/rss-$r.tsv"
  ( while kill -0 $pid 2>/dev/null; do echo -e "$EPOCHREALTIME\t$(rss $pid VmRSS)" >> "$out/rss-$r.tsv"; sleep 0.05; done ) &
  sampler=$!
  t0=$EPOCHREALTIME
  cpids=()
  for i in $(seq 0 $((CLIENTS - 1))); do client "$i" > "$B/c-$i" & cpids+=($!); done
  wait "${cpids[@]}"
  secs=$(echo "$EPOCHREALTIME - $t0" | bc)
  hwm=$(rss $pid VmHWM)
  kill $sampler; kill $pid; wait $pid 2>/dev/null; pid=
  cat "$B"/c-* > "$out/clients-$r.tsv"
  peak=$(awk -v m="$idle" '$2 > m {m = $2} END {print m}' "$out/rss-$r.tsv")
  ok=$(awk -F'\t' '$2 ~ /\?/ && $3 == 200' "$out/clients-$r.tsv" | wc -l)
  refused=$(awk -F'\t' '$2 ~ /\?/ && $3 == 422' "$out/clients-$r.tsv" | wc -l)
  other=$(awk -F'\t' '$3 != 200 && $3 != 201 && $3 != 422' "$out/clients-$r.tsv" | wc -l)
  printf '%s\t%d\t%d\t%d\t%d\t%.0f\t%d\t%d\t%d\n' "$r" $((idle / 1024)) $((peak / 1024)) $(((peak - idle) / 1024)) $((hwm / 1024)) "$secs" "$ok" "$refused" "$other" | tee -a "$out/summary.tsv"
done
echo "load at end: $(cat /proc/loadavg)" >> "$out/machine.txt"
