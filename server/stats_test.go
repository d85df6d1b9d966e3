package server

import (
	"strings"
	"testing"
	"time"
)

func TestLatencyBucket(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0},
		{10 * time.Microsecond, 0},
		{10*time.Microsecond + 1, 1},
		{40 * time.Microsecond, 1},
		{40*time.Microsecond + 1, 2},
		{time.Millisecond, 4},
		{2621440 * time.Microsecond, 9},
		{2621440*time.Microsecond + 1, 10},
		{time.Hour, 10},
	} {
		if got := latencyBucket(uint64(tc.d)); got != tc.want {
			t.Errorf("latencyBucket(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestStatsPublished checks that statistics tallied per connection reach
// INFO and /metrics: commands earlier in the same pipeline count in INFO,
// and every command whose reply was read is in /metrics.
func TestStatsPublished(t *testing.T) {
	s := startServer(t, nil)
	r := dialRaw(t, s)
	// One write, so that the server reads the whole pipeline at once.
	r.send("SET k v\r\nGET k\r\nGET nope\r\nINCR k\r\nINFO stats\r\n")
	for _, want := range []string{"+OK\r\n", "$1\r\nv\r\n", "$-1\r\n", "-ERR value is not an integer or out of range\r\n"} {
		eq(t, "reply", r.reply(), want)
	}
	info := r.reply()
	for _, want := range []string{"total_commands_processed:4\r\n", "keyspace_hits:1\r\n", "keyspace_misses:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", want, info)
		}
	}

	// Pipelined SETs are queued into one batch and counted when it commits.
	r.send("SET a 1\r\nSET b 2\r\nSET c 3\r\n")
	for range 3 {
		eq(t, "reply", r.reply(), "+OK\r\n")
	}
	_, body := httpGet(t, "http://"+s.HTTPAddr()+"/metrics")
	for _, want := range []string{
		`lsmgo_commands_total{cmd="set"} 4`,
		`lsmgo_commands_total{cmd="get"} 2`,
		`lsmgo_commands_total{cmd="info"} 1`,
		`lsmgo_command_errors_total{cmd="incr"} 1`,
		`lsmgo_command_errors_total{cmd="get"} 0`,
		`lsmgo_command_duration_seconds_count{cmd="set"} 4`,
		`lsmgo_command_duration_seconds_count{cmd="get"} 2`,
		`lsmgo_command_duration_seconds_bucket{cmd="get",le="+Inf"} 2`,
		`lsmgo_command_duration_seconds_count{cmd="del"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// CONFIG RESETSTAT also resets what the pipeline before it counted.
	r.send("GET k\r\nCONFIG RESETSTAT\r\nINFO stats\r\n")
	r.reply()
	eq(t, "reply", r.reply(), "+OK\r\n")
	if info := r.reply(); !strings.Contains(info, "total_commands_processed:1\r\n") || !strings.Contains(info, "keyspace_hits:0\r\n") {
		t.Errorf("INFO stats after CONFIG RESETSTAT:\n%s", info)
	}
}

// TestResetStatClearsCommandStats checks that CONFIG RESETSTAT clears
// the command and error stats, as Redis does, including a tally another
// connection began before the reset and publishes after it.
func TestResetStatClearsCommandStats(t *testing.T) {
	s := startServer(t, nil)
	a, b := dialRaw(t, s), dialRaw(t, s)
	for range 3 {
		a.send("GET k\r\n")
		a.reply()
	}
	a.send("NOSUCHCMD\r\n")
	a.reply()
	info := func() string {
		b.send("INFO commandstats\r\n")
		return b.reply()
	}
	if !strings.Contains(info(), "cmdstat_get:calls=3,") {
		t.Fatalf("before RESETSTAT: %s", info())
	}
	// A tally begun before the reset, as a connection in mid-batch has.
	var stale tally
	stale.since(s.stats.epoch.Load())
	stale.add(commands["get"], 1, false, false)

	b.send("CONFIG RESETSTAT\r\n")
	eq(t, "RESETSTAT", strings.TrimSpace(b.reply()), "+OK")
	stale.publish(s)
	got := info()
	if strings.Contains(got, "cmdstat_get") || !strings.Contains(got, "cmdstat_config|resetstat:calls=1,") {
		t.Errorf("after RESETSTAT: %s", got)
	}
	b.send("INFO errorstats\r\n")
	if got := b.reply(); strings.Contains(got, "errorstat_") {
		t.Errorf("errorstats after RESETSTAT: %s", got)
	}
	// Counting goes on after the reset.
	a.send("GET k\r\n")
	a.reply()
	if got := info(); !strings.Contains(got, "cmdstat_get:calls=1,") {
		t.Errorf("GET after RESETSTAT: %s", got)
	}
}
