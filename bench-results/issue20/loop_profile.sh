#!/usr/bin/env bash
# perf record of one lsmgo server under redis-benchmark -c 50: the flat
# profile (self time, symbols ≥ 1%) and the share of kernel samples.
#   [ARGS='-event-loop yes'] [PORT=7160] loop_profile.sh OUT.txt BINARY TEST P
set -u
out=${1:?usage}; bin=${2:?binary}; t=${3:-get}; P=${4:-1}
port=${PORT:-7160}
d=$(mktemp -d)
$bin serve -addr 127.0.0.1:$port -http '' -dir $d/db -appendfsync everysec ${ARGS:-} >$d/log 2>&1 & pid=$!
sleep 2
n=$((P == 1 ? 40000 : 400000))
redis-benchmark -p $port -c 50 -n $((n / 4)) -P $P -r 100000 -t $t -q >/dev/null 2>&1 # warm up
perf record -F 1999 -g -p $pid -o $d/perf.data -- timeout 60 \
  redis-benchmark -p $port -c 50 -n $n -P $P -r 100000 -t $t -q >$d/bench 2>/dev/null
{
  echo "# $bin ${ARGS:-} $t -P $P: $(tr '\r' '\n' <$d/bench | grep 'requests per second' | tail -1)"
  perf report -i $d/perf.data --no-children --sort sym --stdio -g none --percent-limit 0.8 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -45
  perf report -i $d/perf.data --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -4
} >$out
kill $pid; wait $pid 2>/dev/null; rm -rf $d
