package server

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
)

// latencyHist is one command's latency histogram for LATENCY HISTOGRAM
// and INFO latencystats: the bucket layout of the HDR histogram Redis
// keeps per command (nanoseconds from 1 to 10^9, two significant
// digits), so that percentiles, and the keys and counts of LATENCY
// HISTOGRAM's cumulative distribution, are the figures Redis would print
// for the same durations. Its counts are atomic, so that connections
// publish into it without a lock (tally.publish); hdrhistogram-go, the
// well-kept Go port, is neither safe for concurrent writers nor a
// dependency, and its iterators do not expose the log steps Redis prints.
//
// Layout: 256 sub-buckets per bucket, the lower half of each bucket past
// the first shared with the one below, as in HDR: index i < 256 counts
// the value i exactly; past that, bucket b (from 1) covers [128<<b,
// 256<<b) in steps of 1<<b.
type latencyHist struct {
	counts [hdrCounts]atomic.Uint64
}

const (
	hdrHalfMagnitude = 7 // log2 of half the sub-buckets
	hdrHalf          = 1 << hdrHalfMagnitude
	// hdrBuckets is how many buckets it takes to reach 10^9 ns (Redis'
	// LATENCY_HISTOGRAM_MAX_VALUE) from 256 by doubling.
	hdrBuckets = 23
	hdrCounts  = (hdrBuckets + 1) * hdrHalf
	hdrMaxNs   = 1_000_000_000
	// hdrFirstLevel is the first step of LATENCY HISTOGRAM's
	// distribution (1024 ns, about 1 µs); each next step doubles it.
	hdrFirstLevel = 1024
)

// hdrIndex is the index of the count that holds v (at least 1).
func hdrIndex(v uint64) int {
	bucket := bits.Len64(v|(2*hdrHalf-1)) - (hdrHalfMagnitude + 1)
	sub := int(v >> bucket)
	return (bucket+1)<<hdrHalfMagnitude + sub - hdrHalf
}

// hdrValue is the lowest value the count at index i holds.
func hdrValue(i int) uint64 {
	bucket := i>>hdrHalfMagnitude - 1
	sub := i&(hdrHalf-1) + hdrHalf
	if bucket < 0 {
		sub -= hdrHalf
		bucket = 0
	}
	return uint64(sub) << bucket
}

// hdrHighest is the highest value counted together with v.
func hdrHighest(v uint64) uint64 {
	bucket := max(bits.Len64(v|(2*hdrHalf-1))-(hdrHalfMagnitude+1), 0)
	return hdrValue(hdrIndex(v)) + 1<<bucket - 1
}

// record counts one command of us microseconds. Redis measures commands
// in whole microseconds and records them in nanoseconds, clamped to
// [1, 10^9]; so does this, to land in the same counts.
func (h *latencyHist) record(us uint64) {
	ns := min(max(us*1000, 1), hdrMaxNs)
	h.counts[hdrIndex(ns)].Add(1)
}

// snapshot copies the counts and returns their total.
func (h *latencyHist) snapshot() (c *[hdrCounts]uint64, total uint64) {
	c = new([hdrCounts]uint64)
	for i := range h.counts {
		c[i] = h.counts[i].Load()
		total += c[i]
	}
	return c, total
}

// hdrPercentile is HDR's value at percentile p (0 to 100) of counts, in
// nanoseconds: the highest value of the count where the cumulative count
// reaches p percent of total (rounded), or the lowest for p = 0.
func hdrPercentile(c *[hdrCounts]uint64, total uint64, p float64) uint64 {
	want := max(uint64(min(p, 100)/100*float64(total)+0.5), 1)
	var cum uint64
	for i, n := range c {
		cum += n
		if cum >= want {
			if p == 0 {
				return hdrValue(i)
			}
			return hdrHighest(hdrValue(i))
		}
	}
	return 0
}

// hdrStep is one step of LATENCY HISTOGRAM's distribution: how many
// commands took at most usec microseconds.
type hdrStep struct{ usec, count uint64 }

// hdrDistribution is the cumulative distribution Redis prints for a
// command: at 1024 ns and each doubling, the count of values up to the
// highest one counted with that level, as long as some remain; a step
// that adds nothing is left out. Like HDR's log iterator it stops at the
// last level inside the histogram's range.
func hdrDistribution(c *[hdrCounts]uint64, total uint64) []hdrStep {
	var steps []hdrStep
	var cum uint64
	next := 0
	for level := uint64(hdrFirstLevel); cum < total; level *= 2 {
		end := hdrIndex(level)
		if end >= hdrCounts {
			break
		}
		prev := cum
		for ; next <= end; next++ {
			cum += c[next]
		}
		if cum > prev {
			steps = append(steps, hdrStep{hdrHighest(level) / 1000, cum})
		}
	}
	return steps
}

// percentilesSetting is latency-tracking-info-percentiles: numbers from
// 0 to 100 separated by spaces, or none.
func percentilesSetting() *setting {
	return &setting{name: "latency-tracking-info-percentiles", live: true,
		usage: "percentiles INFO latencystats reports, separated by spaces",
		get: func(c *Config) string {
			f := make([]string, len(c.LatencyPercentiles))
			for i, p := range c.LatencyPercentiles {
				f[i] = formatPercentile(p)
			}
			return strings.Join(f, " ")
		},
		set: func(c *Config, v string) error {
			var ps []float64
			for _, f := range strings.Fields(v) {
				p, err := strconv.ParseFloat(f, 64)
				if err != nil || math.IsNaN(p) {
					//lint:ignore ST1005 Redis' exact words, which clients may match
					return errors.New("Invalid latency-tracking-info-percentiles parameters")
				}
				if p < 0 || p > 100 {
					return errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
				}
				ps = append(ps, p)
			}
			c.LatencyPercentiles = ps
			return nil
		}}
}

// formatPercentile prints p as Redis does ("%f" less trailing zeros):
// 50, 99.9.
func formatPercentile(p float64) string {
	s := strconv.FormatFloat(p, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
