# Shared by bigcoll.sh and run.sh: builds lsmgo into $bin, and stops the
# one server a script runs at a time ($pid, its directory $work) at exit.
bin=$(mktemp -d /tmp/types-bin-XXXX)
go build -o "$bin/lsmgo" ./server/cmd/lsmgo
pid=""; work=""
stop() {
	# Only the server this script started, by PID.
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	pid=""
	[ -n "$work" ] && rm -rf "$work"
	work=""
}
trap 'stop; rm -rf "$bin"' EXIT

wait_port() {
	for _ in $(seq 400); do
		redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "nothing answers on 127.0.0.1:$1" >&2
	return 1
}
