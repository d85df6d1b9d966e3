#!/bin/bash
# redis-benchmark over the Redis types (issue 10,
# bench-results/history/redis-types.md): lsmgo serve (appendfsync everysec) against redis-server
# (appendonly yes, appendfsync everysec), each fresh in an empty temporary
# directory, ROUNDS rounds with the order alternated, at -P 1 and -P 16.
#
# Usage, from the repository root: bench-results/types/run.sh OUTDIR [ROUNDS] [REQUESTS]
# Loopback ports 17311 (lsmgo) and 17312 (redis). Writes
# OUTDIR/SERVER-rN-PP.csv (redis-benchmark --csv) and prints them.
set -euo pipefail
out=$(realpath -m "$1"); rounds=${2:-3}; requests=${3:-200000}
tests=${TESTS:-lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,mset}
mkdir -p "$out"
. "$(dirname "$0")/lib.sh"

start_lsmgo() {
	work=$(mktemp -d /tmp/types-XXXX)
	"$bin/lsmgo" serve --dir "$work/data" --addr 127.0.0.1:17311 --http "" --appendfsync everysec \
		--loglevel warning >"$work/out" 2>"$work/log" &
	pid=$!; port=17311
	wait_port $port
}
start_redis() {
	work=$(mktemp -d /tmp/types-XXXX)
	redis-server --port 17312 --bind 127.0.0.1 --dir "$work" --appendonly yes --appendfsync everysec \
		--save "" --logfile "$work/redis.log" &
	pid=$!; port=17312
	wait_port $port
}

for r in $(seq "$rounds"); do
	order="redis lsmgo"; [ $((r % 2)) = 0 ] && order="lsmgo redis"
	for s in $order; do
		for P in 1 16; do
			"start_$s"
			echo "== round $r $s -P $P load $(cut -d' ' -f1-3 /proc/loadavg)"
			redis-benchmark -p "$port" -t "$tests" -r 100000 -n "$requests" -c 50 -P "$P" --csv |
				tee "$out/$s-r$r-P$P.csv"
			stop
		done
	done
done
