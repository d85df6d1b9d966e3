package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLatencyMonitor: the ring keeps the newest samples, one a second
// with the worst of it, and LATENCY reports what a slow command left.
func TestLatencyMonitor(t *testing.T) {
	var lm latencyMonitor
	for i := range int64(200) {
		lm.add("e", 1000+i, i)
		lm.add("e", 1000+i, 1) // the same second: the worst stays
	}
	h := lm.history("e")
	if len(h) != latencySamples || h[0].at != 1040 || h[len(h)-1].at != 1199 || h[len(h)-1].ms != 199 {
		t.Fatalf("history: %d samples, first %+v, last %+v", len(h), h[0], h[len(h)-1])
	}
	names, last, worst := lm.latest()
	if len(names) != 1 || last[0].ms != 199 || worst[0] != 199 {
		t.Fatalf("latest: %v %v %v", names, last, worst)
	}

	s := startServer(t, nil)
	c := newClient(t, s, 2, nil)
	ctx := context.Background()
	c.ConfigSet(ctx, "latency-monitor-threshold", "1")
	c.Do(ctx, "latency", "reset")
	// A script that spins past the threshold is one slow command.
	c.Eval(ctx, "local t = redis.call('TIME'); repeat local n = redis.call('TIME') until (n[1]-t[1])*1000000 + (n[2]-t[2]) > 5000 return 1", nil)
	got, err := c.Do(ctx, "latency", "latest").Slice()
	if err != nil || len(got) != 1 {
		t.Fatalf("LATENCY LATEST = %v, %v", got, err)
	}
	ev := got[0].([]any)
	if ev[0] != "command" || ev[2].(int64) < 5 || time.Since(time.Unix(ev[1].(int64), 0)) > time.Minute {
		t.Fatalf("LATENCY LATEST event = %v", ev)
	}
	if h, _ := c.Do(ctx, "latency", "history", "command").Slice(); len(h) != 1 {
		t.Fatalf("LATENCY HISTORY command = %v", h)
	}
	if doc, _ := c.Do(ctx, "latency", "doctor").Text(); !strings.Contains(doc, "command: 1 latency spikes") {
		t.Fatalf("LATENCY DOCTOR = %q", doc)
	}
	if n, _ := c.Do(ctx, "latency", "reset", "command", "nope").Int(); n != 1 {
		t.Fatalf("LATENCY RESET = %d", n)
	}
	if got, _ := c.Do(ctx, "latency", "latest").Slice(); len(got) != 0 {
		t.Fatalf("LATENCY LATEST after RESET = %v", got)
	}
}
