package server

import (
	"context"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/lsmgo-dev/lsmgo/server/resp"
)

// hdrModelHighest is the highest value HDR (two significant digits)
// counts together with v, from the layout's definition rather than the
// index arithmetic: exact below 256, then steps of 1/128 of the power of
// two below v.
func hdrModelHighest(v uint64) uint64 {
	if v < 256 {
		return v
	}
	w := uint64(1) << (bits.Len64(v) - 8)
	return v/w*w + w - 1
}

// TestLatencyHistogramModel records random durations and checks the
// percentiles and the cumulative distribution against a sorted list.
func TestLatencyHistogramModel(t *testing.T) {
	rng := newRand(19)
	for round := range 20 {
		var h latencyHist
		var ns []uint64
		n := 1 + rng.IntN(2000)
		for range n {
			// Mostly short, some up to past the 1 s clamp.
			us := uint64(rng.IntN(5))
			if rng.IntN(4) == 0 {
				us = uint64(rng.Int64N(1 << uint(rng.IntN(31))))
			}
			h.record(us)
			ns = append(ns, min(max(us*1000, 1), hdrMaxNs))
		}
		slices.Sort(ns)
		counts, total := h.snapshot()
		if total != uint64(n) {
			t.Fatalf("round %d: total %d, want %d", round, total, n)
		}
		for _, p := range []float64{0, 1, 50, 99, 99.9, 100} {
			rank := max(int(p/100*float64(n)+0.5), 1)
			want := hdrModelHighest(ns[rank-1])
			if p == 0 {
				want = hdrValue(hdrIndex(ns[0]))
			}
			if got := hdrPercentile(counts, total, p); got != want {
				t.Fatalf("round %d: p%v = %d, want %d (value %d)", round, p, got, want, ns[rank-1])
			}
		}
		var prev uint64
		level := uint64(hdrFirstLevel)
		for _, s := range hdrDistribution(counts, total) {
			for hdrModelHighest(level)/1000 < s.usec {
				level *= 2
			}
			hi := hdrModelHighest(level)
			want := uint64(0)
			for _, v := range ns {
				if v <= hi {
					want++
				}
			}
			if s.usec != hi/1000 || s.count != want || s.count <= prev {
				t.Fatalf("round %d: step %+v, want %d µs %d (previous count %d)", round, s, hi/1000, want, prev)
			}
			prev = s.count
		}
		if last := ns[n-1]; last <= hdrModelHighest(1<<29) && prev != uint64(n) {
			t.Fatalf("round %d: the distribution ends at %d of %d", round, prev, n)
		}
	}
}

// TestLatencyHistogramKeys: the steps Redis prints for durations of 0 to
// 40 µs, as its documentation shows them (1, 2, 4, 8, 16, 33).
func TestLatencyHistogramKeys(t *testing.T) {
	var h latencyHist
	for us := range uint64(41) {
		h.record(us)
	}
	var keys []uint64
	for _, s := range hdrDistribution(h.snapshot()) {
		keys = append(keys, s.usec)
	}
	eq(t, "keys", keys, []uint64{1, 2, 4, 8, 16, 33, 66})
	// Redis' INFO shows p50=1.003 for commands of 1 µs.
	var one latencyHist
	one.record(1)
	counts, total := one.snapshot()
	eq(t, "p50 of 1 µs", hdrPercentile(counts, total, 50), uint64(1003))
}

// TestLatencyHistogramCommand: LATENCY HISTOGRAM and INFO latencystats
// have Redis' shape in both protocols (compared with redis-server with
// the numbers masked), count the calls, skip unknown commands, list a
// container's subcommands, follow latency-tracking and its percentiles,
// and forget everything at CONFIG RESETSTAT.
func TestLatencyHistogramCommand(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		ours := dialDiff(t, "tcp", s.Addr().String(), proto)
		theirs := dialDiff(t, "unix", redisSock, proto)
		cmds := [][]string{
			{"CONFIG", "RESETSTAT"},
			{"SET", "a", "1"}, {"SET", "a", "2"}, {"GET", "a"}, {"CONFIG", "GET", "maxclients"},
			{"LATENCY", "HISTOGRAM", "set", "nosuch", "GET", "config|get"},
			{"LATENCY", "HISTOGRAM", "config|get"},
			{"LATENCY", "HISTOGRAM", "nosuch"},
			{"LATENCY", "HISTOGRAM", "set", "set"},
			{"CONFIG", "SET", "latency-tracking-info-percentiles", "50 99.9 100"},
			{"CONFIG", "GET", "latency-tracking-info-percentiles"},
			{"CONFIG", "SET", "latency-tracking-info-percentiles", "101"},
			{"CONFIG", "SET", "latency-tracking", "no"},
			{"SET", "a", "3"},
			{"LATENCY", "HISTOGRAM", "set"},
			{"CONFIG", "SET", "latency-tracking", "yes"},
			{"CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"},
			{"CONFIG", "RESETSTAT"},
			{"LATENCY", "HISTOGRAM"},
		}
		diffSequence(t, ours, theirs, cmds, maskedShape)
	}

	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.ConfigSet(ctx, "latency-tracking-info-percentiles", "50 99.9 100")
	for range 10 {
		c.Incr(ctx, "n")
	}
	got, err := c.Do(ctx, "latency", "histogram", "incr").Slice()
	if err != nil || len(got) != 2 || got[0] != "incr" {
		t.Fatalf("LATENCY HISTOGRAM incr = %v, %v", got, err)
	}
	if calls := got[1].([]any)[1]; calls != int64(10) {
		t.Fatalf("calls = %v", calls)
	}
	// A container lists its subcommands with samples (Redis in its hash
	// table's order, so not compared above).
	c.ConfigGet(ctx, "maxclients")
	sub, err := c.Do(ctx, "latency", "histogram", "config").Slice()
	if err != nil || len(sub) != 6 || !slices.Contains(sub, any("config|get")) || !slices.Contains(sub, any("config|set")) {
		t.Fatalf("LATENCY HISTOGRAM config = %v, %v", sub, err)
	}
	info := c.Info(ctx, "latencystats").Val()
	if !strings.Contains(info, "latency_percentiles_usec_incr:p50=") || !strings.Contains(info, ",p99.9=") || !strings.Contains(info, ",p100=") {
		t.Fatalf("INFO latencystats:\n%s", info)
	}
}

// maskedShape renders a reply with its integers zeroed and the contents
// of a histogram_usec emptied, keeping types, lengths and strings: the
// shape two servers that measured different times share.
func maskedShape(v resp.Value) string { return render(maskTimes(v), exact) }

func maskTimes(v resp.Value) resp.Value {
	v.Int = 0
	v.Array = slices.Clone(v.Array)
	for i := range v.Array {
		v.Array[i] = maskTimes(v.Array[i])
		if i > 0 && string(v.Array[i-1].Str) == "histogram_usec" {
			v.Array[i].Array = nil
		}
	}
	return v
}

// TestLatencyGraph draws a rising series: the lowest sample is '_' on
// the bottom row, the highest '#' on the top row with '|' below it, each
// column's age is written down under a blank line, and past 80 samples
// the graph wraps.
func TestLatencyGraph(t *testing.T) {
	const now = 100_000
	var samples []latencySample
	for i := range int64(90) {
		samples = append(samples, latencySample{at: now - 45 + i/2, ms: 10 + i})
	}
	lines := strings.Split(latencyGraph("command", samples, 500, now), "\n")
	eq(t, "title", lines[0], "command - high 99 ms, low 10 ms (all time high 500 ms)")
	eq(t, "rule", lines[1], strings.Repeat("-", 80))
	col := func(first, j int) string {
		var b strings.Builder
		for _, l := range lines[first : first+4] {
			b.WriteByte(l[j])
		}
		return b.String()
	}
	eq(t, "lowest column", col(2, 0), "   _")
	eq(t, "blank line", lines[6], strings.Repeat(" ", 80))
	eq(t, "first age, downwards", lines[7][0:1]+lines[8][0:1]+lines[9][0:1], "45s")
	eq(t, "last age", lines[len(lines)-3][9:10]+lines[len(lines)-2][9:10], "1s")
	// The second block starts after an empty line and the last label row.
	block := slices.Index(lines, "") + 1
	if block == 0 || len(lines[block]) != 10 {
		t.Fatalf("no second block of 10 columns:\n%s", strings.Join(lines, "\n"))
	}
	eq(t, "highest column", col(block, 9), "#|||")
}
