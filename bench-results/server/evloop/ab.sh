#!/bin/bash
# Alternated side-by-side rounds of the 50:50 GET/SET mix (lsmgo-bench client
# mode, 32 B keys, 128 B values) against fresh servers, the order rotated
# every round. Usage:
#   WL="50:1 512:1 50:16" B=DIR ab.sh ROUNDS DURATION OUTDIR SERVER...
# WL lists concurrency:pipeline pairs; B holds the lsmgo-bench binary.
# SERVER is "redis" or /path/to/lsmgo[:ENV=VAL ENV=VAL], the environment
# passed to the server; with LSMGO_EVLOOP_ADDR in it (the trial build on
# branch evloop-gnet-trial) the load goes to 127.0.0.1:9192.
set -u
rounds=$1; dur=$2; out=$3; shift 3; servers=("$@")
mkdir -p $out
B=${B:-/tmp/evloop}
srvpid=""; d=""
cleanup() { [ -n "$srvpid" ] && kill $srvpid 2>/dev/null && wait $srvpid 2>/dev/null; [ -n "$d" ] && rm -rf $d; }
trap cleanup EXIT
start() {
  spec=$1
  d=$(mktemp -d /tmp/srv-XXXX)
  if [ "$spec" = redis ]; then
    redis-server --port 6391 --bind 127.0.0.1 --appendonly yes --appendfsync everysec --save '' --dir $d --daemonize no --logfile $d/log >/dev/null 2>&1 &
    srvpid=$!; port=6391
  else
    bin=${spec%%:*}; extra=""; [ "$spec" != "$bin" ] && extra=${spec#*:}
    env $extra $bin serve --appendfsync everysec --dir $d/data --addr 127.0.0.1:9191 --http 127.0.0.1:8191 >$d/out 2>$d/log &
    srvpid=$!; port=9191
    case "$extra" in *EVLOOP_ADDR*) port=9192;; esac
  fi
  for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
}
for r in $(seq $rounds); do
  n=${#servers[@]}
  for k in $(seq 0 $((n-1))); do
    idx=$(( (k + r) % n ))
    spec=${servers[$idx]}; name=$(basename ${spec%%:*}); [ "$spec" != "${spec%%:*}" ] && name=$name-${spec#*:}
    name=$(echo "$name" | tr -c 'A-Za-z0-9_=.-' '_')
    start $spec
    for w in ${WL:-50:1 512:1 50:16}; do
      set -- ${w/:/ }
      $B/lsmgo-bench --mode=client --addr=127.0.0.1:$port --concurrency $1 --pipeline $2 --duration $dur --ratio 50:50 --key-size 32 --value-size 128 --progress=off --out $out/$name-r$r-c$1-P$2 > $out/$name-r$r-c$1-P$2.txt 2>&1
      echo "r$r $name c$1 P$2 load=$(cut -d' ' -f1 /proc/loadavg) $(grep -E '^getset' $out/$name-r$r-c$1-P$2.txt)"
    done
    kill $srvpid || echo "SERVER DIED"; wait $srvpid 2>/dev/null; srvpid=""; [ -f $d/log ] && cp $d/log $out/$name-r$r.log; rm -rf $d; d=""
  done
done
