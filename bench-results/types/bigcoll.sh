#!/bin/bash
# Big collections (issue 10, bench-results/history/redis-types.md): one hash, set,
# sorted set and list of N elements each, loaded through redis-cli --pipe
# into lsmgo serve (appendfsync everysec) and into redis-server
# (appendonly yes, appendfsync everysec), one server at a time; then RSS,
# point reads by redis-benchmark (HGET, SISMEMBER, ZSCORE of random
# elements, LINDEX of the middle one: p50/p99), reads of 100 elements from
# the middle (ZRANGEBYSCORE, LRANGE), and DEL of each collection, timed.
#
# Usage, from the repository root: bench-results/types/bigcoll.sh OUTDIR [N] [TYPES]
# N defaults to 10,000,000; TYPES to "hash set zset list". Loopback ports
# 17301 (lsmgo) and 17302 (redis). Writes OUTDIR/SERVER.txt per server
# and OUTDIR/summary.md.
set -euo pipefail
out=$(realpath -m "$1"); n=${2:-10000000}; types=${3:-hash set zset list}
mkdir -p "$out"
. "$(dirname "$0")/lib.sh"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$pid/status"; }

# gen TYPE: the RESP stream that builds the collection, 100 elements per
# command. Element names match redis-benchmark's __rand_int__ (12 digits).
gen() {
	awk -v n="$n" -v t="$1" 'BEGIN {
		per = 100
		for (i = 0; i < n; i += per) {
			m = (n - i < per) ? n - i : per
			if (t == "hash") { printf "*%d\r\n$4\r\nHSET\r\n$1\r\nh\r\n", 2 + 2*m }
			if (t == "set")  { printf "*%d\r\n$4\r\nSADD\r\n$1\r\ns\r\n", 2 + m }
			if (t == "zset") { printf "*%d\r\n$4\r\nZADD\r\n$1\r\nz\r\n", 2 + 2*m }
			if (t == "list") { printf "*%d\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n", 2 + m }
			for (j = i; j < i + m; j++) {
				e = sprintf("e:%012d", j)
				if (t == "hash") { printf "$%d\r\n%s\r\n$%d\r\n%d\r\n", length(e), e, length(j ""), j }
				if (t == "set" || t == "list") { printf "$%d\r\n%s\r\n", length(e), e }
				if (t == "zset") { printf "$%d\r\n%d\r\n$%d\r\n%s\r\n", length(j ""), j, length(e), e }
			}
		}
	}'
}

# bench TYPE WHAT CMD...: 200,000 runs of CMD by 50 clients, requests/s
# and latency percentiles (redis-benchmark's csv: "test","rps","avg",
# "min","p50","p95","p99","max").
bench() {
	local t=$1 what=$2
	shift 2
	redis-benchmark -p "$port" -c 50 -n 200000 -r "$n" --csv "$@" | tail -1 |
		tr -d '"' | awk -F, -v t="$t" -v w="$what" '{print t, w "_rps", $2, "p50_ms", $5, "p99_ms", $7}' >>"$f"
}

# measure SERVER PORT: load, read and delete every type on a running server.
measure() {
	local name=$1
	port=$2 f="$out/$1.txt"
	echo "server $name n=$n" >"$f"
	echo "rss_kb_empty $(rss_kb)" >>"$f"
	for t in $types; do
		local s=$(date +%s.%N)
		gen "$t" | redis-cli -p "$port" --pipe >/dev/null
		local e=$(date +%s.%N)
		echo "$t load_s $(echo "$e - $s" | bc) rss_kb $(rss_kb) hwm_kb $(hwm_kb)" >>"$f"
		case $t in
			hash) cmd=(HGET h e:__rand_int__) ;;
			set) cmd=(SISMEMBER s e:__rand_int__) ;;
			zset) cmd=(ZSCORE z e:__rand_int__) ;;
			# Redis refuses an index with leading zeros, which
			# __rand_int__ has: the middle element, a fixed index.
			list) cmd=(LINDEX l $((n / 2))) ;;
		esac
		bench "$t" read "${cmd[@]}"
		# A read of 100 elements from the middle, in order.
		case $t in
			zset) bench "$t" range ZRANGEBYSCORE z $((n / 2)) $((n / 2 + 99)) ;;
			list) bench "$t" range LRANGE l $((n / 2)) $((n / 2 + 99)) ;;
		esac
	done
	for t in $types; do
		local key=${t:0:1}
		local s=$(date +%s.%N)
		redis-cli -p "$port" DEL "$key" >/dev/null
		local e=$(date +%s.%N)
		echo "$t del_s $(echo "$e - $s" | bc)" >>"$f"
	done
	echo "rss_kb_after_del $(rss_kb) hwm_kb $(hwm_kb)" >>"$f"
}

work=$(mktemp -d /tmp/bigcoll-XXXX)
"$bin/lsmgo" serve --dir "$work/data" --addr 127.0.0.1:17301 --http "" --appendfsync everysec \
	--loglevel warning >"$work/out" 2>"$work/log" &
pid=$!
wait_port 17301
measure lsmgo 17301
echo "disk_kb $(du -sk "$work/data" | cut -f1)" >>"$out/lsmgo.txt"
stop

work=$(mktemp -d /tmp/bigcoll-XXXX)
redis-server --port 17302 --dir "$work" --appendonly yes --appendfsync everysec --save "" \
	--logfile "$work/redis.log" &
pid=$!
wait_port 17302
measure redis 17302
stop

cat "$out"/lsmgo.txt "$out"/redis.txt
