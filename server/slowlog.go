package server

import (
	"strconv"
	"sync"
	"time"
)

// Like Redis, the slow log keeps at most this many arguments of a command
// and this many bytes of each, so one huge command cannot pin memory.
const (
	slowlogMaxArgc   = 32
	slowlogMaxArgLen = 128
)

// slowlogEntry is one logged command.
type slowlogEntry struct {
	id       int64
	when     time.Time
	duration time.Duration
	args     []string
	addr     string
	name     string
}

// slowlog is a bounded, newest-first log of slow commands.
type slowlog struct {
	mu      sync.Mutex
	entries []slowlogEntry // newest first
	nextID  int64
}

// add logs a command that took d. args are copied.
func (l *slowlog) add(c *conn, args [][]byte, d time.Duration, maxLen int) {
	l.addFrom(c.nc.RemoteAddr().String(), c.clientName(), args, d, maxLen)
}

// addFrom logs a command or HTTP request of the client at addr, named
// name, that took d. args are copied.
func (l *slowlog) addFrom(addr, name string, args [][]byte, d time.Duration, maxLen int) {
	e := slowlogEntry{when: time.Now(), duration: d, addr: addr, name: name}
	n := min(len(args), slowlogMaxArgc)
	for i, a := range args[:n] {
		s := string(a[:min(len(a), slowlogMaxArgLen)])
		if len(a) > slowlogMaxArgLen {
			s += "... (" + strconv.Itoa(len(a)-slowlogMaxArgLen) + " more bytes)"
		}
		if i == n-1 && len(args) > n {
			s = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		}
		e.args = append(e.args, s)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, slowlogEntry{})
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
	l.trimLocked(maxLen)
}

func (l *slowlog) trimLocked(maxLen int) {
	if len(l.entries) > maxLen {
		clear(l.entries[maxLen:])
		l.entries = l.entries[:maxLen]
	}
}

// trim applies a new maximum length.
func (l *slowlog) trim(maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trimLocked(maxLen)
}

// get returns up to n of the newest entries; n < 0 means all.
func (l *slowlog) get(n int) []slowlogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	return append([]slowlogEntry(nil), l.entries[:n]...)
}

func (l *slowlog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *slowlog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// cmdSlowlogGet implements SLOWLOG GET [count].
func cmdSlowlogGet(c *conn, _ *command, args [][]byte) {
	n := 10
	if len(args) == 3 {
		v, ok := parseInt(args[2])
		if !ok || v < -1 || v > 1<<31 {
			c.fail("ERR count should be greater than or equal to -1")
			return
		}
		n = int(v)
	}
	entries := c.s.slowlog.get(n)
	c.wr.ArrayHeader(len(entries))
	for _, e := range entries {
		c.wr.ArrayHeader(6)
		c.wr.Int(e.id)
		c.wr.Int(e.when.Unix())
		c.wr.Int(e.duration.Microseconds())
		c.wr.ArrayHeader(len(e.args))
		for _, a := range e.args {
			c.wr.BulkString(a)
		}
		c.wr.BulkString(e.addr)
		c.wr.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *conn, _ *command, _ [][]byte) { c.wr.Int(int64(c.s.slowlog.len())) }

func cmdSlowlogReset(c *conn, _ *command, _ [][]byte) {
	c.s.slowlog.reset()
	c.ok()
}
