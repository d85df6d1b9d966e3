#!/bin/bash
# Summarises a run.sh output directory into OUTDIR/summary.md (and stdout).
# Usage: bench-results/scaleout/summary.sh OUTDIR
set -euo pipefail
out=$1
setups=(direct1 proxy1 proxy3)
# summary.md: per set-up, medians over the rounds of ops/s, p50, p99 and
# the shards' and proxy's CPU per request, the ops/s range, and ops/s
# per round in round order.
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
	echo "| set-up | ops/s median (min–max) | p50 ms | p99 ms | shards CPU µs/op | proxy CPU µs/op | ops/s per round |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
	for s in "${setups[@]}"; do
		rows=$(for d in "$out/$s"-r*; do
			# results.csv: ops is column 6, ops_per_sec 8, p50_ns 10, p99_ns 11.
			awk -F, 'NR == 2 { printf "%s %s %s %s ", $6, $8, $10 / 1e6, $11 / 1e6 }' "$d/results.csv"
			awk '/nutcracker/ { p += $1; next } { s += $1 } END { printf "%s %s\n", s, p }' "$d/cpu.txt"
		done | awk '{ print $2, $3, $4, $5 / $1 * 1e6, $6 / $1 * 1e6 }')
		col() { echo "$rows" | awk -v c="$1" '{ print $c }'; }
		proxy="–"
		[ "$s" = direct1 ] || proxy=$(col 5 | med | awk '{ printf "%.1f", $1 }')
		printf "| %s | %.1fk (%.1fk–%.1fk) | %.2f | %.2f | %.1f | %s | %s |\n" "$s" \
			"$(col 1 | med | awk '{ print $1 / 1000 }')" \
			"$(col 1 | sort -g | head -1 | awk '{ print $1 / 1000 }')" \
			"$(col 1 | sort -g | tail -1 | awk '{ print $1 / 1000 }')" \
			"$(col 2 | med)" "$(col 3 | med)" "$(col 4 | med)" \
			"$proxy" \
			"$(col 1 | awk '{ printf "%s%.1fk", (NR > 1 ? ", " : ""), $1 / 1000 }')"
	done
	echo
	echo "Throughput relative to direct1 in the same round:"
	echo
	echo "| round | proxy1 ÷ direct1 | proxy3 ÷ direct1 | proxy3 ÷ proxy1 |"
	echo "| --- | ---: | ---: | ---: |"
	for d in "$out"/direct1-r*; do
		r=${d##*-r}
		ops() { awk -F, 'NR == 2 { print $8 }' "$out/$1-r$r/results.csv"; }
		awk -v r="$r" -v d="$(ops direct1)" -v p1="$(ops proxy1)" -v p3="$(ops proxy3)" \
			'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", r, p1 / d, p3 / d, p3 / p1 }'
	done
} >"$out/summary.md"
cat "$out/summary.md"
