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

// watchdog stops a call whose heap growth passes the limit. A VM has one,
// and its timer is armed while calls run and stops once a tick finds none:
// a timer made and stopped per call cost 4% of a short script's CPU, where
// telling the watchdog of each call costs an uncontended lock. A call
// is sampled from the first tick that finds it running, its baseline,
// so the short scripts that are most of a server's load are never
// sampled at all.
type watchdog struct {
	limit int64
	mu    sync.Mutex
	timer *time.Timer
	armed bool
	// cur is the call running now; seen is the call the baseline was
	// sampled for.
	cur, seen *call
	baseline  int64
	sample    []metrics.Sample
}

// start watches c, which is about to run.
func (wd *watchdog) start(c *call) {
	wd.mu.Lock()
	wd.cur = c
	if !wd.armed {
		wd.armed = true
		if wd.timer == nil {
			wd.timer = time.AfterFunc(watchdogPeriod, wd.tick)
		} else {
			wd.timer.Reset(watchdogPeriod)
		}
	}
	wd.mu.Unlock()
}

// finish ends the watch of the call that start began; it has returned.
func (wd *watchdog) finish() {
	wd.mu.Lock()
	wd.cur = nil
	wd.mu.Unlock()
}

func (wd *watchdog) tick() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	c := wd.cur
	if c == nil {
		wd.armed = false
		wd.seen = nil
		return
	}
	heap := wd.heap()
	if c != wd.seen {
		wd.seen, wd.baseline = c, heap
	} else if heap-wd.baseline > wd.limit {
		// Garbage counts until a collection: only live growth stops
		// the script.
		runtime.GC()
		if wd.heap()-wd.baseline > wd.limit {
			c.stop(errNoMemory)
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

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// heapKB is the Go heap's live objects in kilobytes.
func heapKB() int64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() >> 10)
}
