#!/bin/bash
# Replication benchmark of issue 23 (bench-results/history/replication.md):
# lsmgo serve against redis-server 7, both appendonly/everysec, on loopback.
#
#  1. Primary write throughput without replicas and with two attached:
#     redis-benchmark -t set,lpush,hset -c 50 -r 100000 at -P 1 and -P 16,
#     N requests per test, ROUNDS rounds, lsmgo and Redis alternated (the
#     first server swaps every round), every set-up fresh in empty dirs.
#  2. Replication lag during the with-replicas runs: replprobe.go -mode lag
#     SETs a probe key on the primary every 20 ms and times, from the
#     primary's +OK, until each replica returns it.
#  3. Full sync: fill a primary with SYNC_KEYS keys of SYNC_VALUE (1024)
#     random bytes, on each of SYNC_SERVERS (lsmgo redis),
#     time `cp -r` of its data directory (plus sync) and then a new
#     replica's full sync (start until master_link_status:up).
#
# Usage, from the repository root:
#   [N=100000] [SYNC_KEYS=1000000] [SYNC_VALUE=1024] [SYNC_SERVERS="lsmgo redis"] [PORT=17300]
#   [OLD=BINARY] [BIN=DIR] bench-results/replication/run.sh OUTDIR [ROUNDS]
# ROUNDS 0 runs only the full sync.
# Loopback ports PORT to PORT+33. Needs redis-server and redis-benchmark.
# With OLD, an lsmgo binary built from another commit (say main, before
# a change) runs as server "lsmgo-old" in each round too. With BIN, the
# lsmgo and replprobe binaries in DIR are used instead of building them
# (so that a build does not run inside a measuring slot).
set -euo pipefail
out=$(realpath -m "$1"); rounds=${2:-3}
n=${N:-100000}; sync_keys=${SYNC_KEYS:-1000000}; port=${PORT:-17300}
sync_value=${SYNC_VALUE:-1024}; sync_servers=${SYNC_SERVERS:-lsmgo redis}
mkdir -p "$out"

bin=$(mktemp -d /tmp/replbench-bin-XXXX)
if [ -n "${BIN:-}" ]; then
	cp "$BIN/lsmgo" "$BIN/replprobe" "$bin/"
else
	go build -o "$bin/lsmgo" ./server/cmd/lsmgo
	go build -o "$bin/replprobe" bench-results/replication/replprobe.go
fi

pids=()
work=""
# alive PID: whether the process runs (an exited child not yet waited for
# is a zombie, which kill(2) still reaches).
alive() {
	local state
	state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$state" ] && [ "$state" != Z ]
}
stop_all() {
	# Only the processes this script started, by PID.
	# A Redis replica writing its first AOF refuses SIGTERM ("Writing
	# initial AOF, can't exit"): ask again each second, SIGKILL after 60 s.
	for p in "${pids[@]}"; do
		for i in $(seq 600); do
			alive "$p" || break
			[ $((i % 10)) -eq 1 ] && kill "$p" 2>/dev/null
			sleep 0.1
		done
		alive "$p" && kill -9 "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	[ -n "$work" ] && rm -rf "$work"
	work=""
}
trap 'stop_all; rm -rf "$bin"' EXIT

wait_port() {
	for _ in $(seq 400); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	return 1
}

# link_up PORT: whether the replica on PORT reports its link to the primary up.
link_up() { redis-cli -p "$1" INFO replication 2>/dev/null | grep -q 'master_link_status:up'; }

# wait_link PORT [SECONDS]: wait (60 s) for the replica on PORT to be up.
wait_link() {
	for _ in $(seq $((${2:-60} * 20))); do link_up "$1" && return 0; sleep 0.05; done
	echo "replica on $1 never came up" >&2
	return 1
}

# start SERVER NAME PORT [PRIMARY_PORT]: one server in $work/NAME.
start() {
	local server=$1 name=$2 port=$3 primary=${4:-}
	mkdir -p "$work/$name"
	case $server in
	lsmgo | lsmgo-old)
		local exe=$bin/lsmgo
		[ "$server" = lsmgo-old ] && exe=$OLD
		"$exe" serve --dir "$work/$name/data" --addr "127.0.0.1:$port" --http "" \
			--appendfsync everysec --loglevel warning \
			${primary:+--replicaof "127.0.0.1 $primary"} >"$work/$name.log" 2>&1 &
		;;
	redis)
		# Diskless sync is Redis 7's default; its 5 s wait for more
		# replicas is set to 0 so that it does not count as sync time.
		redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$name" --save "" \
			--appendonly yes --appendfsync everysec --repl-diskless-sync-delay 0 \
			--daemonize no --logfile "$work/$name.log" \
			${primary:+--replicaof 127.0.0.1 "$primary"} &
		;;
	esac
	pids+=($!)
	wait_port "$port"
}

# cpu_seconds PID: user+system CPU seconds of a process.
cpu_seconds() {
	awk '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / 100 }' "/proc/$1/stat"
}

# replicas_cpu: the CPU seconds of every server but the first (the primary).
replicas_cpu() {
	local sum=0
	for p in "${pids[@]:1}"; do sum=$(echo "$sum + $(cpu_seconds "$p")" | bc); done
	echo "$sum"
}

# throughput SERVER REPLICAS ROUND: one fresh set-up, -P 1 then -P 16.
throughput() {
	local server=$1 reps=$2 round=$3 base=$port
	[ "$server" = redis ] && base=$((port + 10))
	[ "$server" = lsmgo-old ] && base=$((port + 30))
	work=$(mktemp -d /tmp/replbench-XXXX)
	start "$server" primary $base
	local replicas=""
	for i in $(seq "$reps"); do
		start "$server" "replica$i" $((base + i)) $base
		wait_link $((base + i))
		replicas+="${replicas:+,}127.0.0.1:$((base + i))"
	done
	for p in 1 16; do
		local tag="$server-r$reps-P$p-round$round" probe=""
		if [ "$reps" -gt 0 ]; then
			"$bin/replprobe" -mode lag -primary "127.0.0.1:$base" -replicas "$replicas" \
				-for 300s >"$out/$tag.lag" &
			probe=$!
		fi
		local cpu0 rcpu0; cpu0=$(cpu_seconds "${pids[0]}"); rcpu0=$(replicas_cpu)
		timeout 300 redis-benchmark -p $base -t set,lpush,hset -n "$n" -c 50 -P $p -r 100000 --csv \
			>"$out/$tag.csv"
		echo "primary_cpu_s,$(echo "$(cpu_seconds "${pids[0]}") - $cpu0" | bc)" >>"$out/$tag.csv"
		if [ "$reps" -gt 0 ]; then echo "replicas_cpu_s,$(echo "$(replicas_cpu) - $rcpu0" | bc)" >>"$out/$tag.csv"; fi
		if [ -n "$probe" ]; then kill -TERM "$probe"; wait "$probe" || true; fi
		echo "$tag: $(tr '\n' ' ' <"$out/$tag.csv")"
		if [ -n "$probe" ]; then echo "  lag: $(grep "^all" "$out/$tag.lag")"; fi
	done
	stop_all
}

# fullsync SERVER: fill a primary, time cp -r of its data dir, then a
# new replica's full sync.
fullsync() {
	local server=$1 base=$((port + 20))
	[ "$server" = redis ] && base=$((port + 22))
	work=$(mktemp -d /tmp/replbench-XXXX)
	start "$server" primary $base
	"$bin/replprobe" -mode load -primary "127.0.0.1:$base" -n "$sync_keys" -d "$sync_value" -c 4 -P 64 \
		| tee "$out/fullsync-$server.load"
	sleep 2 # let everysec reach the disk
	local dir="$work/primary"
	local bytes; bytes=$(du -sb "$dir" | cut -f1)
	local t0 t1 t2 t3
	t0=$(date +%s.%N)
	cp -r "$dir" "$work/cp-copy" && sync
	t1=$(date +%s.%N)
	rm -rf "$work/cp-copy"
	t2=$(date +%s.%N)
	local pcpu0; pcpu0=$(cpu_seconds "${pids[0]}")
	start "$server" replica $((base + 1)) $base
	wait_link $((base + 1)) 1800
	t3=$(date +%s.%N)
	local pcpu rcpu
	pcpu=$(echo "$(cpu_seconds "${pids[0]}") - $pcpu0" | bc)
	rcpu=$(cpu_seconds "${pids[1]}")
	local rbytes; rbytes=$(du -sb "$work/replica" | cut -f1)
	{
		echo "server,primary_dir_bytes,cp_s,cp_MBps,replica_dir_bytes,sync_s,sync_MBps_of_primary_dir,sync_full,sync_primary_cpu_s,sync_replica_cpu_s"
		echo "$server,$bytes,$(echo "$t1 - $t0" | bc),$(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l | xargs printf %.0f),$rbytes,$(echo "$t3 - $t2" | bc),$(echo "$bytes / ($t3 - $t2) / 1000000" | bc -l | xargs printf %.0f),$(redis-cli -p $base INFO stats | grep -o 'sync_full:[0-9]*' | cut -d: -f2),$pcpu,$rcpu"
	} | tee "$out/fullsync-$server.csv"
	stop_all
}

{
	date -u
	grep -m1 'model name' /proc/cpuinfo
	uname -r
	nproc
	redis-server --version
	git log -1 --format='commit %h %s'
} >"$out/machine.txt"

for r in $(seq "$rounds"); do
	order="lsmgo ${OLD:+lsmgo-old} redis"
	[ $((r % 2)) -eq 0 ] && order="redis ${OLD:+lsmgo-old} lsmgo"
	for s in $order; do
		for reps in 0 2; do
			echo "round $r $s replicas=$reps load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/loadavg.txt"
			throughput "$s" "$reps" "$r"
		done
	done
done
if [ "$sync_keys" -gt 0 ]; then
	for s in $sync_servers; do
		echo "fullsync $s load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/loadavg.txt"
		fullsync "$s"
	done
fi
