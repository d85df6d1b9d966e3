package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// histShards spreads latency recording over this many locked histogram
// pairs: one histogram per connection would cost 200 KiB each, and one
// shared lock would serialize a thousand connections.
const histShards = 8

type histShard struct {
	mu sync.Mutex
	// total covers the level; interval the time since the last progress
	// line.
	total, interval *hdrhistogram.Histogram
	_               [64]byte // keep neighbouring shards' locks off one cache line
}

// latencies collects the latencies of one level of a load mode (client,
// http) from many connections at once, and prints its progress lines.
type latencies struct {
	shards [histShards]histShard
}

// init gives every shard its empty histograms.
func (ls *latencies) init() {
	for i := range ls.shards {
		ls.shards[i].total = newHistogram()
		ls.shards[i].interval = newHistogram()
	}
}

// record adds connection id's latencies to its shard.
func (ls *latencies) record(id int, lat []int64) {
	s := &ls.shards[id%histShards]
	s.mu.Lock()
	for _, d := range lat {
		// Clamp as the engine mode does: a 100-second reply is news
		// either way.
		d = min(max(d, histMin), histMax)
		_ = s.total.RecordValue(d)
		_ = s.interval.RecordValue(d)
	}
	s.mu.Unlock()
}

// total merges the shards' histograms of the whole level.
func (ls *latencies) total() *hdrhistogram.Histogram {
	h := newHistogram()
	for i := range ls.shards {
		h.Merge(ls.shards[i].total)
	}
	return h
}

// reportProgress prints a line a second until finished closes: the rate
// and p99 of the last second and the rate since the start.
func (ls *latencies) reportProgress(began time.Time, name string, conns int, p *printer, finished <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := began
	interval := newHistogram()
	for {
		select {
		case <-finished:
			return
		case now := <-tick.C:
			interval.Reset()
			var total int64
			for i := range ls.shards {
				s := &ls.shards[i]
				s.mu.Lock()
				interval.Merge(s.interval)
				s.interval.Reset()
				total += s.total.TotalCount()
				s.mu.Unlock()
			}
			n := interval.TotalCount()
			line := fmt.Sprintf("  [%s c=%d] %4.0fs: %s ops/s now, %s ops/s average",
				name, conns, now.Sub(began).Seconds(), fmtCount(float64(n)/now.Sub(last).Seconds()),
				fmtCount(float64(total)/now.Sub(began).Seconds()))
			if n > 0 {
				line += fmt.Sprintf(", p99 %s now", fmtNanos(interval.ValueAtQuantile(99)))
			}
			p.progressLine(line)
			last = now
		}
	}
}
