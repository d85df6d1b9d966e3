#!/bin/bash
# Scale-out through twemproxy (bench-results/history/scale-out.md): lsmgo-bench client mode
# against 1 lsmgo serve directly, 1 behind nutcracker and 3 behind
# nutcracker, each set-up started fresh in empty temporary directories,
# ROUNDS rounds with the order rotated every round.
#
# Usage, from the repository root: [DURATION=10s] bench-results/scaleout/run.sh OUTDIR [ROUNDS]
# Needs nutcracker (Debian package nutcracker). Loopback ports 17200-17299.
# Per run it writes OUTDIR/SETUP-rN/{results.*,cpu.txt}, and at the end the
# summary table OUTDIR/summary.md (summary.sh: medians, ranges, ratios).
set -euo pipefail
out=$(realpath -m "$1"); rounds=${2:-3}
mkdir -p "$out"
# Load: 50 connections, GET:SET 50:50, 128-byte values, 100k keys; each
# level runs for a fixed time (the runs are bounded by --duration).
load=(--concurrency 50 --ratio 50:50 --value-size 128 --keyspace 100000 --duration "${DURATION:-10s}" --progress=off)

bin=$(mktemp -d /tmp/scaleout-bin-XXXX)
go build -o "$bin/lsmgo" ./server/cmd/lsmgo
go build -o "$bin/lsmgo-bench" ./bench/cmd/lsmgo-bench

pids=()
work=""
stop_all() {
	# Only the processes this script started, by PID.
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	[ -n "$work" ] && rm -rf "$work"
	work=""
}
trap 'stop_all; rm -rf "$bin"' EXIT

wait_port() {
	for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	return 1
}

# start_shards N: N lsmgo serve on 127.0.0.1:17201.. in fresh directories.
start_shards() {
	work=$(mktemp -d /tmp/scaleout-XXXX)
	for i in $(seq "$1"); do
		"$bin/lsmgo" serve --dir "$work/shard$i" --addr "127.0.0.1:$((17200 + i))" --http "" \
			--loglevel warning >"$work/shard$i.out" 2>"$work/shard$i.log" &
		pids+=($!)
		wait_port $((17200 + i))
	done
}

# start_proxy N: nutcracker on 127.0.0.1:17200 in front of N shards, with
# the configuration of doc/scale-out.md.
start_proxy() {
	{
		printf 'lsmgo:\n  listen: 127.0.0.1:17200\n  hash: fnv1a_64\n  hash_tag: "{}"\n'
		printf '  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  timeout: 2000\n  servers:\n'
		for i in $(seq "$1"); do printf '   - 127.0.0.1:%d:1 shard%d\n' $((17200 + i)) "$i"; done
	} >"$work/nutcracker.yml"
	nutcracker -c "$work/nutcracker.yml" -o "$work/nutcracker.log" -p "$work/nutcracker.pid" \
		-a 127.0.0.1 -s 17299 &
	pids+=($!)
	wait_port 17200
}

# cpu_seconds PID: user+system CPU time of a process (fields 14 and 15 of
# /proc/PID/stat, in 1/100 s).
cpu_seconds() {
	awk '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / 100 }' "/proc/$1/stat"
}

run() { # run SETUP ROUND
	local setup=$1 round=$2 port=17200 dir="$out/$1-r$2"
	case $setup in
	direct1) start_shards 1; port=17201 ;;
	proxy1) start_shards 1; start_proxy 1 ;;
	proxy3) start_shards 3; start_proxy 3 ;;
	esac
	mkdir -p "$dir"
	local before=() p
	for p in "${pids[@]}"; do before+=("$(cpu_seconds "$p")"); done
	echo "== round $round $setup load $(cut -d' ' -f1-3 /proc/loadavg)"
	"$bin/lsmgo-bench" --mode=client --addr "127.0.0.1:$port" "${load[@]}" --out "$dir" >"$dir/out.txt" 2>&1
	grep -E '^getset' "$dir/out.txt"
	# CPU seconds each process spent during the load: shards first, then
	# the proxy when there is one.
	: >"$dir/cpu.txt"
	local i=0
	for p in "${pids[@]}"; do
		echo "$(awk -v a="$(cpu_seconds "$p")" -v b="${before[$i]}" 'BEGIN { printf "%.2f", a - b }') $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-40)" >>"$dir/cpu.txt"
		i=$((i + 1))
	done
	cat "$dir/cpu.txt"
	stop_all
}

setups=(direct1 proxy1 proxy3)
for round in $(seq "$rounds"); do
	# Rotate the order so that no set-up always runs first or last.
	for k in 0 1 2; do run "${setups[$(((k + round - 1) % 3))]}" "$round"; done
done

"$(dirname "$0")/summary.sh" "$out"
