#!/bin/bash
# s22-heic2 quiet slot: peak RSS above idle, 8 clients, fresh 48 MP and 25 MP HEICs, main vs branch alternated, 3 rounds.
cd /work/wt-s22-heic2
out=bench-results/imgbed/rss/s22-heic2-slot
mkdir -p $out
for r in 1 2 3; do
  for side in 6928 5000; do
    order="main branch"; [ $r = 2 ] && order="branch main"
    for b in $order; do
      echo "$(date -u +%T) round $r side $side $b $(cat /proc/loadavg)" >> $out/runs.log
      PRIO= BIN=/tmp/s22h2/lsmgo-$b ROUNDS=1 PORT=7200 FORMATS=heic SIDE=$side CACHE=$HOME/.cache/lsmgo-bench-s22h2 \
        bench-results/imgbed/rss/rss.sh $out/heic$side-$b-$r > /dev/null 2>&1
    done
  done
done
echo "$(date -u +%T) done $(cat /proc/loadavg)" >> $out/runs.log
