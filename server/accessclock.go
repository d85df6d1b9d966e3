package server

import (
	"sync/atomic"
	"time"
)

// accessClock answers OBJECT IDLETIME without a write per read: keys live
// on disk, and storing each key's access time with it would turn every
// read into an engine write. Instead each key hashes to one of
// accessSlots slots in memory, and a slot holds the latest second in
// which any key hashing to it was used. A key's idle time is the time
// since its slot's second, or since the server started if the slot is
// older: a lower bound, exact unless another key of the same slot was
// used after it (at most 1 key in accessSlots shares a slot with a given
// key in a keyspace of accessSlots keys). It costs 4 MiB and, per key a
// command names, a hash and an atomic load (a store once a second).
const accessSlots = 1 << 20

type accessClock struct {
	slots [accessSlots]atomic.Uint32 // Unix seconds
}

func accessSlot(key []byte) uint32 {
	h := uint32(2166136261) // FNV-1a
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return h & (accessSlots - 1)
}

// touch records a use of key at Unix second at; a slot's second never
// goes back.
func (ac *accessClock) touch(key []byte, at int64) {
	s := &ac.slots[accessSlot(key)]
	for {
		old := s.Load()
		if int64(old) >= at || s.CompareAndSwap(old, uint32(at)) {
			return
		}
	}
}

// idle returns the seconds since key was last used, as far as the clock
// knows, at Unix second now; since is the server's start.
func (ac *accessClock) idle(key []byte, now int64, since time.Time) int64 {
	last := max(int64(ac.slots[accessSlot(key)].Load()), since.Unix())
	return max(0, now-last)
}

// noTouch names the commands that read a key without using it, as Redis
// looks them up with LOOKUP_NOTOUCH: asking about a key's expiry, type
// or existence, or introspecting it, leaves its idle time alone.
var noTouch = map[string]bool{
	"ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true, "type": true, "exists": true,
	"object|encoding": true, "object|freq": true, "object|idletime": true, "object|refcount": true,
	"memory|usage": true,
}

// touchKeys records a use of the keys cmd names in args: in the access
// clock, and in the LFU counters under an LFU policy (lfu.go). A client
// in CLIENT NO-TOUCH mode uses keys only through TOUCH, as in Redis.
func (c *conn) touchKeys(cmd *command, args [][]byte) {
	if cmd.firstKey <= 0 || noTouch[cmd.name] || c.state.Load()&stateNoTouch != 0 && cmd.name != "touch" {
		return
	}
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	now := c.clock().Unix()
	lfu := c.s.lfu()
	cfg := c.s.config()
	for i := cmd.firstKey; i <= last && i < len(args); i += max(cmd.step, 1) {
		c.s.access.touch(args[i], now)
		if lfu != nil {
			lfu.touch(args[i], now, cfg.LFULogFactor, cfg.LFUDecayTime)
		}
	}
}

// TOUCH is EXISTS that uses its keys: run's touchKeys records the use.
func init() {
	register(spec{name: "touch", arity: -2, flags: flagReadonly | flagFast, firstKey: 1, lastKey: -1, step: 1, group: "generic", since: "3.2.1",
		summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", run: cmdExists})
}
