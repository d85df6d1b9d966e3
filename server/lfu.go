package server

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// lfuClock answers OBJECT FREQ under an LFU maxmemory-policy with Redis'
// logarithmic access counter, kept the way accessClock keeps idle times:
// per slot of accessSlots, in memory, made when an LFU policy is first
// selected (4 MiB). A slot holds Redis' 24 bits of LFU state, the minute
// of the last decrement (16 bits) and an 8-bit counter that an access
// increments with probability 1/((counter-5)·lfu-log-factor+1) and that
// loses one per lfu-decay-time minutes idle, plus a bit saying the slot
// was used. Keys sharing a slot share a counter, and a key inherits the
// counter of a deleted key of its slot: an approximation, exact for a key
// alone in its slot since it was created (doc/server.md, "OBJECT").
type lfuClock struct {
	slots [accessSlots]atomic.Uint32
}

const (
	lfuInitVal = 5 // Redis' LFU_INIT_VAL: a new key's counter
	lfuUsed    = 1 << 24
)

// lfuMinutes is Redis' LFUGetTimeInMinutes: Unix minutes modulo 2^16.
func lfuMinutes(unix int64) uint32 { return uint32(unix/60) & 0xffff }

// lfuDecayed is Redis' LFUDecrAndReturn: the slot's counter less one per
// decayTime minutes since its last decrement. An unused slot reads as a
// key about to be created: its first access makes it lfuInitVal.
func lfuDecayed(slot uint32, now uint32, decayTime int) uint32 {
	if slot&lfuUsed == 0 {
		return lfuInitVal - 1
	}
	counter, ldt := slot&0xff, slot>>8&0xffff
	if decayTime <= 0 {
		return counter
	}
	elapsed := now - ldt
	if now < ldt {
		elapsed = 0xffff - ldt + now
	}
	periods := elapsed / uint32(decayTime)
	if periods > counter {
		return 0
	}
	return counter - periods
}

// lfuIncr is Redis' LFULogIncr.
func lfuIncr(counter uint32, logFactor int) uint32 {
	if counter == 255 {
		return 255
	}
	base := max(float64(counter)-lfuInitVal, 0)
	if rand.Float64() < 1/(base*float64(logFactor)+1) {
		counter++
	}
	return counter
}

// touch counts one access to key at Unix second unix.
func (lc *lfuClock) touch(key []byte, unix int64, logFactor, decayTime int) {
	s := &lc.slots[accessSlot(key)]
	now := lfuMinutes(unix)
	for {
		old := s.Load()
		counter := lfuIncr(lfuDecayed(old, now, decayTime), logFactor)
		if s.CompareAndSwap(old, lfuUsed|now<<8|counter) {
			return
		}
	}
}

// set gives key the counter freq (RESTORE ... FREQ).
func (lc *lfuClock) set(key []byte, unix int64, freq uint32) {
	lc.slots[accessSlot(key)].Store(lfuUsed | lfuMinutes(unix)<<8 | freq)
}

// freq is OBJECT FREQ of key: its counter, decayed.
func (lc *lfuClock) freq(key []byte, unix int64, decayTime int) uint32 {
	return lfuDecayed(lc.slots[accessSlot(key)].Load(), lfuMinutes(unix), decayTime)
}

// lfu returns the server's LFU clock when an LFU maxmemory-policy is
// selected, making it the first time; nil otherwise.
func (s *Server) lfu() *lfuClock {
	if !isLFUPolicy(s.config().MaxMemoryPolicy) {
		return nil
	}
	if lc := s.lfuCounters.Load(); lc != nil {
		return lc
	}
	s.lfuCounters.CompareAndSwap(nil, new(lfuClock))
	return s.lfuCounters.Load()
}

func isLFUPolicy(policy string) bool { return strings.HasSuffix(policy, "-lfu") }

// maxMemoryPolicies are Redis' maxmemory-policy values.
var maxMemoryPolicies = []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
	"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}

// maxMemoryPolicySetting is maxmemory-policy: case-insensitive, read
// back in lower case, as Redis' enum settings are.
func maxMemoryPolicySetting() *setting {
	return &setting{name: "maxmemory-policy", live: true,
		usage: "Redis' eviction policy; only chooses between the access clock (OBJECT IDLETIME) and LFU counters (OBJECT FREQ): lsmgo evicts nothing",
		get:   func(c *Config) string { return c.MaxMemoryPolicy },
		set: func(c *Config, v string) error {
			v = strings.ToLower(v)
			if err := oneOf(maxMemoryPolicies...)(v); err != nil {
				return err
			}
			c.MaxMemoryPolicy = v
			return nil
		}}
}
