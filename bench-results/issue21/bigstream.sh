#!/usr/bin/env bash
# Issue 21's large-value memory benchmark: bigstream.go against a fresh
# lsmgo serve (appendfsync everysec, engine defaults) and a fresh
# redis-server 7 (appendonly no: the AOF changes nothing resident, and
# saves writing gigabytes), one after the other. Run from the repository
# root: bench-results/issue21/bigstream.sh OUT.csv ./lsmgo [bigstream flags]
set -u
out=${1:?usage: bigstream.sh OUT.csv [LSMGO_BINARY] [flags]}; : > $out
bin=${2:-lsmgo}; shift 2
d=$(mktemp -d)
go build -o $d/bigstream "$(dirname "$0")/bigstream.go" || exit 1
$bin serve -addr 127.0.0.1:17351 -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 &
lp=$!
sleep 1
timeout 1800 $d/bigstream -addr 127.0.0.1:17351 -pid $lp -name lsmgo "$@" >> $out
echo "lsmgo,disk,$(du -sk $d/lsmgo | cut -f1) kB after DEL" >> $out
kill $lp; wait $lp 2>/dev/null
mkdir -p $d/redis
redis-server --port 17352 --bind 127.0.0.1 --save '' --appendonly no --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
sleep 1
timeout 1800 $d/bigstream -addr 127.0.0.1:17352 -pid $rp -name redis "$@" >> $out
kill $rp; wait $rp 2>/dev/null
rm -rf $d
