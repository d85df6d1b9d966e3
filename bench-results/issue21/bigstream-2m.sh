#!/bin/bash
# bigstream.go at 2M entries (a fifth of bigstream.sh) against lsmgo serve
# (binary $1) then redis-server, on ports 7110/7111: bigstream-2m.sh BIN OUT.csv
out=$2
bin=$1
d=$(mktemp -d)
go build -o $d/bigstream "$(dirname "$0")/bigstream.go" || exit 1
$bin serve -addr 127.0.0.1:7110 -http '' -dir $d/lsmgo -appendfsync everysec >$d/lsmgo.log 2>&1 &
lp=$!
sleep 1
timeout 900 $d/bigstream -addr 127.0.0.1:7110 -pid $lp -name lsmgo -n 2000000 -pending 200000 -acked 100000 -bits 1000 -keep 200000 >> $out
echo "lsmgo,disk,$(du -sk $d/lsmgo | cut -f1) kB after DEL" >> $out
kill $lp; wait $lp 2>/dev/null
mkdir -p $d/redis
redis-server --port 7111 --bind 127.0.0.1 --save '' --appendonly no --dir $d/redis >$d/redis.log 2>&1 &
rp=$!
sleep 1
timeout 900 $d/bigstream -addr 127.0.0.1:7111 -pid $rp -name redis -n 2000000 -pending 200000 -acked 100000 -bits 1000 -keep 200000 >> $out
kill $rp; wait $rp 2>/dev/null
rm -rf $d
