package luascript

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// call is one running script. It is the context.Context of the Lua state
// while the script runs: gopher-lua checks Done before every instruction,
// so closing done stops the script at its next instruction, and keeps
// stopping it, so pcall cannot swallow the stop.
type call struct {
	caller Caller
	name   string
	// proto is the RESP version redis.setresp chose for replies the
	// script receives.
	proto int
	done  chan struct{}
	once  sync.Once
	why   error
}

func newCall(caller Caller, name string) *call {
	return &call{caller: caller, name: name, proto: 2, done: make(chan struct{})}
}

// stop makes the script fail with reason at its next instruction; the
// first reason wins.
func (c *call) stop(reason error) {
	c.once.Do(func() {
		c.why = reason
		close(c.done)
	})
}

func (c *call) stopped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// reason is why the call was stopped; valid once stopped reports true.
func (c *call) reason() error { return c.why }

// The context.Context methods gopher-lua uses.
func (c *call) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *call) Done() <-chan struct{}       { return c.done }
func (c *call) Value(any) any               { return nil }
func (c *call) Err() error {
	if c.stopped() {
		return c.why
	}
	return nil
}

// watchdogPeriod is how often the heap is sampled while a script runs. A
// script cannot grow the heap faster than it can write memory (a few GB/s),
// so the bound is overshot by at most a few megabytes per period.
const watchdogPeriod = time.Millisecond

// watchdog stops a call whose heap growth passes the limit. It starts
// sampling only after the first period, so the short scripts that are most
// of a server's load never pay for it.
type watchdog struct {
	c        *call
	limit    int64
	mu       sync.Mutex
	timer    *time.Timer
	finished bool
	baseline int64
	sample   []metrics.Sample
}

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

func startWatchdog(c *call, limit int64) *watchdog {
	wd := &watchdog{c: c, limit: limit, baseline: -1}
	wd.mu.Lock() // the first tick may come before timer is set
	wd.timer = time.AfterFunc(watchdogPeriod, wd.tick)
	wd.mu.Unlock()
	return wd
}

// finish stops the sampling; the call has returned.
func (wd *watchdog) finish() {
	wd.mu.Lock()
	wd.finished = true
	wd.timer.Stop()
	wd.mu.Unlock()
}

func (wd *watchdog) tick() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.finished {
		return
	}
	heap := wd.heap()
	if wd.baseline < 0 {
		wd.baseline = heap
	} else if heap-wd.baseline > wd.limit {
		// Garbage counts until a collection: only live growth stops
		// the script.
		runtime.GC()
		if wd.heap()-wd.baseline > wd.limit {
			wd.c.stop(errNoMemory)
			return
		}
	}
	wd.timer.Reset(watchdogPeriod)
}

func (wd *watchdog) heap() int64 {
	if wd.sample == nil {
		wd.sample = []metrics.Sample{{Name: heapObjectsMetric}}
	}
	metrics.Read(wd.sample)
	return int64(wd.sample[0].Value.Uint64())
}

// heapKB is the Go heap's live objects in kilobytes.
func heapKB() int64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() >> 10)
}
