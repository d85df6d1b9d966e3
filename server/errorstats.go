package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// maxErrorKinds bounds how many distinct error prefixes errorStats tracks,
// as Redis bounds its errorstats: a client that makes up error codes (a
// script, a proxy) cannot grow the table without end. Errors of kinds
// beyond the bound still count in the total.
const maxErrorKinds = 128

// errorStats counts error replies by their first word ("ERR",
// "WRONGTYPE", "NOAUTH" …) for INFO errorstats and total_error_replies.
// Errors are the exception, so one mutex is cheap enough.
type errorStats struct {
	mu     sync.Mutex
	kinds  map[string]int64
	total  int64
	capped bool // a kind was not tracked for lack of room
}

// count records one error reply whose message is msg.
func (e *errorStats) count(msg string) {
	kind, _, _ := strings.Cut(msg, " ")
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if _, ok := e.kinds[kind]; !ok && len(e.kinds) >= maxErrorKinds {
		e.capped = true
		return
	}
	if e.kinds == nil {
		e.kinds = map[string]int64{}
	}
	e.kinds[kind]++
}

// write appends the errorstats section's lines, sorted by kind.
func (e *errorStats) write(b *strings.Builder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(e.kinds)) {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", kind, e.kinds[kind])
	}
}

// reset forgets every count, for CONFIG RESETSTAT.
func (e *errorStats) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds, e.total, e.capped = nil, 0, false
}

func (e *errorStats) totals() (total int64, capped bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total, e.capped
}
