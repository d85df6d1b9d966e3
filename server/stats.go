package server

import (
	"sync/atomic"
	"time"
)

// Command statistics are counted twice over: each connection tallies its
// own commands in plain fields (tally), and publishes the tally into the
// server-wide atomic counters (cmdStats, serverStats) before any reply
// leaves and before it blocks for input. A pipeline of N commands thus
// costs a handful of shared atomic adds instead of about ten per command.
// Counting every command into shared counters cost about a fifth of the
// server's CPU at GET -P 16 on 2 cores: the cache lines of the per-command
// counters travelled between the cores on every command.
//
// Whoever reads the shared counters (INFO, /metrics) sees every command
// whose reply has been sent; commands still in a connection's unanswered
// pipeline may be missing.

// latencyBounds are the upper bounds, in nanoseconds, of the command
// latency histogram's buckets: 10 µs × 4^i up to 2.6 s, the buckets of
// lsmgo_command_duration_seconds. A last, implicit bucket holds the rest.
var latencyBounds = func() (b [10]uint64) {
	bound := uint64(10 * time.Microsecond)
	for i := range b {
		b[i] = bound
		bound *= 4
	}
	return b
}()

// latencyBucket returns the index of the bucket that holds d: the first
// bound at or above it, or len(latencyBounds) for the overflow bucket.
func latencyBucket(d uint64) int {
	for i, bound := range latencyBounds {
		if d <= bound {
			return i
		}
	}
	return len(latencyBounds)
}

// cmdStats are the shared counters of one command. Each command's live in
// their own allocation of exactly two cache lines, so that counting GET
// does not invalidate the line holding SET's counters.
type cmdStats struct {
	calls, failures, nanos atomic.Uint64
	// rejected counts calls refused before they ran (arity, NOAUTH),
	// counted directly: they are rare.
	rejected atomic.Uint64
	// buckets counts commands per latency bucket (not cumulative); the
	// last one is the overflow bucket.
	buckets [len(latencyBounds) + 1]atomic.Uint64
	// hist is the command's histogram for LATENCY HISTOGRAM and INFO
	// latencystats, made at its first sample, nil again after CONFIG
	// RESETSTAT.
	hist atomic.Pointer[latencyHist]
}

func newCmdStats() []*cmdStats {
	s := make([]*cmdStats, len(allCommands))
	for i := range s {
		s[i] = new(cmdStats)
	}
	return s
}

// maxTallied bounds how many distinct commands a connection tallies
// before it publishes early, so tallying stays a short linear search.
const maxTallied = 8

// tally is what one connection has counted since it last published. It
// belongs to the connection's goroutine.
type tally struct {
	// epoch is the server's stats epoch the tally began in: CONFIG
	// RESETSTAT cleared what it counted if the epoch moved on since.
	epoch                  uint64
	cmds                   []cmdTally
	commands, hits, misses int64
	// tracked are the durations of the commands since the last publish,
	// for the commands' latency histograms (latency-tracking).
	tracked []trackedRun
}

// trackedRun is one command's duration, in whole microseconds as Redis
// measures them.
type trackedRun struct {
	cmd *command
	us  uint64
}

// maxTracked bounds tally.tracked before the tally publishes early.
const maxTracked = 64

// cmdTally counts the runs of one command.
type cmdTally struct {
	cmd                    *command
	calls, failures, nanos uint64
	buckets                [len(latencyBounds) + 1]uint64
}

// add counts one run of cmd that took d, and keeps d for the command's
// latency histogram when track. It reports whether the tally is full and
// must be published.
func (t *tally) add(cmd *command, d time.Duration, failed, track bool) (full bool) {
	t.commands++
	var e *cmdTally
	for i := range t.cmds {
		if t.cmds[i].cmd == cmd {
			e = &t.cmds[i]
			break
		}
	}
	if e == nil {
		t.cmds = append(t.cmds, cmdTally{cmd: cmd})
		e = &t.cmds[len(t.cmds)-1]
	}
	ns := uint64(max(d, 0))
	e.calls++
	e.nanos += ns
	e.buckets[latencyBucket(ns)]++
	if failed {
		e.failures++
	}
	if track {
		t.tracked = append(t.tracked, trackedRun{cmd, ns / 1000})
	}
	return len(t.cmds) >= maxTallied || len(t.tracked) >= maxTracked
}

// since drops what the tally counted before the stats epoch epoch
// began: those commands ran before a CONFIG RESETSTAT.
func (t *tally) since(epoch uint64) {
	if t.epoch != epoch {
		t.clear()
		t.epoch = epoch
	}
}

func (t *tally) clear() {
	t.cmds, t.tracked = t.cmds[:0], t.tracked[:0]
	t.commands, t.hits, t.misses = 0, 0, 0
}

// publish moves the tally into the server's shared counters and empties
// it, or only empties it when a CONFIG RESETSTAT came since it began.
func (t *tally) publish(s *Server) {
	if t.commands == 0 && t.hits == 0 && t.misses == 0 && len(t.tracked) == 0 {
		return
	}
	if t.epoch != s.stats.epoch.Load() {
		t.clear()
		return
	}
	addNonZero(&s.stats.commands, t.commands)
	addNonZero(&s.stats.hits, t.hits)
	addNonZero(&s.stats.misses, t.misses)
	for i := range t.cmds {
		e := &t.cmds[i]
		st := s.cmdStats[e.cmd.id]
		st.calls.Add(e.calls)
		st.nanos.Add(e.nanos)
		if e.failures != 0 {
			st.failures.Add(e.failures)
		}
		for b, n := range e.buckets {
			if n != 0 {
				st.buckets[b].Add(n)
			}
		}
	}
	for _, r := range t.tracked {
		s.cmdStats[r.cmd.id].histogram().record(r.us)
	}
	t.clear()
}

// reset zeroes the command's counters and drops its latency histogram,
// for CONFIG RESETSTAT.
func (st *cmdStats) reset() {
	for _, v := range []*atomic.Uint64{&st.calls, &st.failures, &st.nanos, &st.rejected} {
		v.Store(0)
	}
	for i := range st.buckets {
		st.buckets[i].Store(0)
	}
	st.hist.Store(nil) // as Redis frees its latency histograms
}

// histogram returns the command's latency histogram, making it at the
// first call.
func (st *cmdStats) histogram() *latencyHist {
	if h := st.hist.Load(); h != nil {
		return h
	}
	st.hist.CompareAndSwap(nil, new(latencyHist))
	return st.hist.Load()
}

func addNonZero(v *atomic.Int64, n int64) {
	if n != 0 {
		v.Add(n)
	}
}
