#!/bin/bash
# Issue 20's 10M-element target: HGET/ZSCORE p99 and RSS on a 10M-field
# hash and a 10M-member sorted set, redis-server 7.0.15 (appendonly yes,
# appendfsync everysec) against `lsmgo serve --appendfsync everysec -http ''`.
#
# Phases, so that the slow fill can run once and the read rounds
# alternate on the filled servers:
#   run.sh start     start both servers (own dirs under $DIR, ports 7401/7402)
#   run.sh load      fill both, one after the other, with
#                    bench-results/pointread10m/load.go (HSET/ZADD of 1,000
#                    pairs, 64 in flight; names are those __rand_int__ makes)
#   run.sh fork      with LSMGO2 set (a second build, say a change under
#                    test): stop lsmgo, copy its directory, start LSMGO on
#                    the one and LSMGO2 on the copy (port 7403), so both read
#                    the same tables; then one unmeasured warm-up run of
#                    each test on every server (a restarted lsmgo reads its
#                    first requests' tables cold)
#   run.sh reads R   R rounds of redis-benchmark -c 50 -P 1 -n $REQS -r $N
#                    HGET/ZSCORE of random existing names on every server,
#                    the order rotated each round
#   run.sh profile [NAME]  perf record -g of server NAME (lsmgo) during
#                    one HGET run
#   run.sh stop      stop the servers, delete $DIR
#   run.sh all       start, load, fork (if LSMGO2), reads $ROUNDS (3),
#                    profile lsmgo (and lsmgo2), stop
# Each reads line gives throughput, p50/p99 (redis-benchmark's summary),
# p99.9 (the first percentile row at or above 99.9%, so an upper bound),
# server CPU per request (utime+stime of the server around the run) and
# the server's RSS after the run.
# Usage: LSMGO=path/to/lsmgo [LSMGO2=path/to/other] run.sh all > out.txt
set -u
N=${N:-10000000}
REQS=${REQS:-200000}
ROUNDS=${ROUNDS:-3}
DIR=${DIR:-/tmp/s20big/data}
RPORT=${RPORT:-7401}
LPORT=${LPORT:-7402}
LPORT2=${LPORT2:-7403}
HERE=$(cd "$(dirname "$0")" && pwd)
LOADER=$DIR/load

rss() { awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$1/status; } # MiB
cpu() { awk '{print $14+$15}' /proc/$1/stat; }                     # clock ticks
tck=$(getconf CLK_TCK)
load() { cut -d' ' -f1-3 /proc/loadavg; }
pids() { RS=$(cat $DIR/redis.pid) LS=$(cat $DIR/lsmgo.pid); }

# lsmgo_start NAME BINARY PORT: starts BINARY serving $DIR/NAME, bounded
# to an hour by timeout, whose child (the server) is recorded in
# $DIR/NAME.pid, and adds it to $DIR/servers.
lsmgo_start() {
  setsid timeout 3600 "$2" serve -addr 127.0.0.1:$3 -http '' -dir "$DIR/$1" \
    -appendfsync everysec >>"$DIR/$1.log" 2>&1 &
  local tp=$!
  for _ in $(seq 1 100); do
    redis-cli -p $3 ping 2>/dev/null | grep -q PONG && break
    sleep 0.5
  done
  pgrep -P $tp >"$DIR/$1.pid" || exit 1
  echo "$3:$(cat "$DIR/$1.pid"):$1" >>"$DIR/servers"
}

start() {
  : "${LSMGO:?LSMGO=path/to/lsmgo}"
  rm -rf "$DIR" && mkdir -p "$DIR/redis" "$DIR/lsmgo" || exit 1
  go build -o "$LOADER" "$HERE/../../pointread10m/load.go" || exit 1
  # timeout bounds each server to an hour; its child is the server, whose
  # memory and CPU are read.
  setsid timeout 3600 redis-server --port $RPORT --bind 127.0.0.1 --dir "$DIR/redis" \
    --appendonly yes --appendfsync everysec --save '' >"$DIR/redis.log" 2>&1 &
  local tp=$!
  sleep 1
  pgrep -P $tp >"$DIR/redis.pid" || exit 1
  echo "$RPORT:$(cat "$DIR/redis.pid"):redis" >"$DIR/servers"
  lsmgo_start lsmgo "$LSMGO" $LPORT
  pids
  echo "started $(date -u +%FT%TZ): redis pid $RS port $RPORT, lsmgo pid $LS port $LPORT ($("$LSMGO" version 2>&1 | head -1))"
}

fill() {
  pids
  for s in "$RPORT $RS redis" "$LPORT $LS lsmgo"; do
    set -- $s
    t0=$(date +%s) c0=$(cpu $2)
    timeout 1200 "$LOADER" -addr 127.0.0.1:$1 -n $N || exit 1
    echo "$3 load: $(($(date +%s) - t0)) s, server CPU $((($(cpu $2) - c0) / tck)) s;" \
      "hlen $(redis-cli -p $1 hlen h) zcard $(redis-cli -p $1 zcard z); rss $(rss $2) MiB; load $(load)"
  done
  sleep 10
  echo "10 s after loading ($(date -u +%TZ)): redis rss $(rss $RS) MiB, lsmgo rss $(rss $LS) MiB;" \
    "disk redis $(du -sm $DIR/redis | cut -f1) MiB, lsmgo $(du -sm $DIR/lsmgo | cut -f1) MiB"
}

# bench PORT PID NAME CMD...: one redis-benchmark run, one summary line.
bench() {
  local port=$1 pid=$2 name=$3
  shift 3
  local c0 c1 out
  c0=$(cpu $pid)
  out=$(timeout 300 redis-benchmark -p $port -c 50 -P 1 -n $REQS -r $N --precision 3 "$@" </dev/null 2>/dev/null | tr '\r' '\n')
  c1=$(cpu $pid)
  local rps p999 sum
  rps=$(awk '/throughput summary/ {print $3}' <<<"$out")
  p999=$(awk '/Latency by percentile/ {on=1} on && /^[0-9.]+% <=/ {sub("%", "", $1); if ($1 >= 99.9) {print $3; exit}}' <<<"$out")
  sum=$(grep -A2 "latency summary" <<<"$out" | tail -1) # avg min p50 p95 p99 max
  set -- $sum
  printf '%-6s %-6s rps %9s  p50 %7s  p99 %7s  p99.9 %7s  max %8s ms  cpu/req %4d us  rss %5s MiB  load %s\n' \
    "$name" "${CMD%% *}" "$rps" "${3:-?}" "${5:-?}" "$p999" "${6:-?}" \
    $(((c1 - c0) * 1000000 / tck / REQS)) "$(rss $pid)" "$(load)"
}

fork() {
  : "${LSMGO2:?LSMGO2=path/to/other lsmgo}"
  pids
  kill "$LS"
  while kill -0 "$LS" 2>/dev/null; do sleep 0.2; done
  cp -a "$DIR/lsmgo" "$DIR/lsmgo2" || exit 1
  grep -v ":lsmgo$" "$DIR/servers" >"$DIR/servers.new" && mv "$DIR/servers.new" "$DIR/servers"
  lsmgo_start lsmgo "$LSMGO" $LPORT
  lsmgo_start lsmgo2 "$LSMGO2" $LPORT2
  echo "forked ($(date -u +%TZ)): lsmgo pid $(cat $DIR/lsmgo.pid) ($LSMGO), lsmgo2 pid $(cat $DIR/lsmgo2.pid) ($LSMGO2)"
  echo "warm-up (unmeasured in the tables):"
  while IFS=: read -r p pid name; do
    REQS=50000 CMD="HGET" bench $p $pid $name hget h f:__rand_int__
    REQS=50000 CMD="ZSCORE" bench $p $pid $name zscore z m:__rand_int__
  done <"$DIR/servers"
}

reads() {
  local rounds=${1:-3} servers
  mapfile -t servers <"$DIR/servers"
  local n=${#servers[@]}
  for round in $(seq 1 $rounds); do
    echo "round $round ($(date -u +%TZ))"
    for i in $(seq 0 $((n - 1))); do
      IFS=: read -r p pid name <<<"${servers[$(((i + round - 1) % n))]}"
      CMD="HGET" bench $p $pid $name hget h f:__rand_int__
      CMD="ZSCORE" bench $p $pid $name zscore z m:__rand_int__
    done
  done
}

# profile [NAME]: perf record -g of server NAME (default lsmgo) during
# one HGET run, then its flat and cumulative profiles.
profile() {
  local p pid name
  IFS=: read -r p pid name <<<"$(grep ":${1:-lsmgo}$" "$DIR/servers")"
  echo "profile: perf record -g -p $pid ($name) during HGET -n $REQS ($(date -u +%TZ))"
  perf record -g -o "$DIR/perf.data" -p $pid -- sleep 12 >/dev/null 2>&1 &
  local pp=$!
  sleep 1
  CMD="HGET" bench $p $pid $name hget h f:__rand_int__
  wait $pp
  perf report -i "$DIR/perf.data" --no-children --stdio --percent-limit 1.5 -g none 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -25
  perf report -i "$DIR/perf.data" --children --stdio --percent-limit 4 -g none 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -40
  # Where the point reads' engine time goes: samples whose stack holds
  # the metadata read (readColl) or the element read (appendElem), and
  # of those, the ones decoding a block from a mapping or reading by pread.
  perf script -i "$DIR/perf.data" -F ip,sym 2>/dev/null | awk 'BEGIN {RS = ""}
    {n++; if (/readColl/) {m++; if (/readMapped/) mm++; if (/pread/) mp++; if (/Cache\)\.Get/) mc++}
     if (/appendElem/) {e++; if (/readMapped/) em++; if (/pread/) ep++; if (/Cache\)\.Get/) ec++}}
    END {printf "samples %d; metadata read %d (mapped decode %d, pread %d, cache get %d); element read %d (mapped decode %d, pread %d, cache get %d)\n", n, m, mm, mp, mc, e, em, ep, ec}'
}

stop() {
  while IFS=: read -r p pid name; do kill "$pid"; done <"$DIR/servers"
  sleep 3
  rm -rf "$DIR"
  echo "stopped, $DIR removed"
}

case ${1:-} in
start) start ;;
load) fill ;;
fork) fork ;;
reads) reads "${2:-3}" ;;
profile) profile "${2:-lsmgo}" ;;
stop) stop ;;
all)
  echo "uptime: $(uptime)"
  start && fill && { [ -z "${LSMGO2:-}" ] || fork; } && reads $ROUNDS && profile lsmgo && { [ -z "${LSMGO2:-}" ] || profile lsmgo2; }
  echo "uptime: $(uptime)"
  stop
  ;;
*)
  echo "usage: run.sh start|load|fork|reads [R]|profile [NAME]|stop|all" >&2
  exit 2
  ;;
esac
