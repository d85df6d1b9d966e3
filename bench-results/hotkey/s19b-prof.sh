#!/bin/bash
# One lsmgo serve (appendfsync everysec, ports 7110-7111) under
# redis-benchmark -c 50 -P P of EVALSHA (or FCALL) of the GET/SET/EXPIRE
# script: an 8 s pprof (PROF=profile, or allocs) into OUT/NAME.pprof and
# the server's CPU per request (utime+stime).
#   [PROF=allocs] [OUT=dir] s19b-prof.sh BIN NAME P [fcall]
bin=$1 name=$2 P=$3 mode=${4:-evalsha}
d=$(mktemp -d)
$bin serve -addr 127.0.0.1:7110 -http 127.0.0.1:7111 -images no -dir $d/db -appendfsync everysec > $d/log 2>&1 &
pid=$!
sleep 1.5
BODY="local v = redis.call('get', KEYS[1]) redis.call('set', KEYS[1], (tonumber(v) or 0) + 1) return redis.call('expire', KEYS[1], 3600)"
SHA=$(redis-cli -p 7110 script load "$BODY")
redis-cli -p 7110 function load replace "#!lua name=hot
redis.register_function('rmw', function(KEYS, ARGV) $BODY end)" >/dev/null
if [ $mode = fcall ]; then args="fcall rmw 1 hot:fn"; else args="evalsha $SHA 1 hot:script"; fi
curl -s -o ${OUT:-.}/$name.pprof "http://127.0.0.1:7111/debug/pprof/${PROF:-profile}?seconds=8" &
cp=$!
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
timeout 60 redis-benchmark -p 7110 -c 50 -n $((P==1?100000:300000)) -P $P --csv $args 2>/dev/null | tail -1
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
echo "cpu us/req: $(awk -v a=$t0 -v b=$t1 -v n=$((P==1?100000:300000)) 'BEGIN{print (b-a)*10000/n}')"
wait $cp
kill $pid; wait $pid 2>/dev/null; rm -rf $d
