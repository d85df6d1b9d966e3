#!/usr/bin/env bash
# s20-cmd's before/after measurement: main (A), the branch (B) and
# redis-server 7 (appendonly yes, appendfsync everysec) under
# redis-benchmark -c 50 -r 100000, -P 1 and -P 16, the three in rotating
# order every round (loop_ab.sh), server CPU per request from /proc.
#   run.sh OUT.csv MAIN_BINARY BRANCH_BINARY [ROUNDS]
here=$(dirname "$0")
PERF=0 N1=${N1:-10000} N16=${N16:-100000} PORT_BASE=${PORT_BASE:-7210} \
  "$here/../loop_ab.sh" "$1" "$2" "$3" "${4:-3}" ${TESTS:-hset,sadd,spop,zadd,zpopmin,lpush,lpop,mset} "1 16"
python3 "$here/summary.py" "$1"
