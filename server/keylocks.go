package server

// Key-stripe locks: what makes a read-modify-write command atomic against
// every other write (doc.go's invariants), and the conn helpers that take
// them for the running command.

import (
	"hash/maphash"
	"slices"
	"sync"
)

// numStripes trades memory for fewer false conflicts between unrelated
// keys; 1024 mutexes cost 8 KiB.
const numStripes = 1024

// keyLocks serializes writers of the same key. Every command that reads a
// key and then writes holds the stripes of all its keys exclusively from
// its first read until its engine commit has made its batch visible (not
// through the fsync: durable.go), so a read-modify-write (INCR, APPEND,
// SET NX …) is atomic with respect to every other write. A blind write,
// one that writes a value it computed without reading the keyspace (a
// plain SET), holds its stripes shared instead: it cannot break another
// blind write's atomicity, and two concurrent blind writes of a key may
// commit in either order, as the sequence numbers the engine gives them
// decide. It still excludes, and waits for, every exclusive holder, so it
// never lands between a read-modify-write's read and its write, and an
// exclusive holder reads only once every blind write it waited for is
// visible. Readers take no lock: the engine publishes each commit
// atomically. Stripes are always taken in ascending order, so multi-key
// commands cannot deadlock.
//
// whole stands for every stripe at once: whoever holds any stripe holds
// whole shared first, and a command that needs every stripe (a script,
// EXEC of a command whose keys are unknown, SWAPDB, FLUSHDB) takes whole
// exclusively instead of 1024 stripes one by one, which cost a third of
// a short script's CPU (profile in BENCHMARKS.md, "Hot keys"). Like a
// stripe, whole is taken once per holder, never again while held (a
// sync.RWMutex read lock is not reentrant).
type keyLocks struct {
	seed    maphash.Seed
	whole   sync.RWMutex
	stripes [numStripes]sync.RWMutex
}

func newKeyLocks() *keyLocks { return &keyLocks{seed: maphash.MakeSeed()} }

func (l *keyLocks) stripe(key []byte) uint32 {
	return uint32(maphash.Bytes(l.seed, key) % numStripes)
}

// lockSet is the sorted, duplicate-free set of stripes one command holds;
// allStripes stands for all of them.
type lockSet []uint32

// everyStripe is the one element of allStripes' set.
const everyStripe = numStripes

// add records the stripe of key.
func (s lockSet) add(l *keyLocks, key []byte) lockSet { return append(s, l.stripe(key)) }

// lock takes every stripe in the set exclusively, in ascending order, and
// returns the set normalized for unlock.
func (s lockSet) lock(l *keyLocks) lockSet { return s.take(l, (*sync.RWMutex).Lock) }

func (s lockSet) unlock(l *keyLocks) { s.release(l, (*sync.RWMutex).Unlock) }

// lockShared takes every stripe in the set shared, for blind writes, in
// ascending order, and returns the set normalized for unlockShared.
func (s lockSet) lockShared(l *keyLocks) lockSet { return s.take(l, (*sync.RWMutex).RLock) }

func (s lockSet) unlockShared(l *keyLocks) { s.release(l, (*sync.RWMutex).RUnlock) }

// take sorts the set, drops duplicates and applies lock to each stripe,
// after taking whole: shared, or exclusively for allStripes' set (an
// empty set takes nothing).
func (s lockSet) take(l *keyLocks, lock func(*sync.RWMutex)) lockSet {
	slices.Sort(s)
	s = slices.Compact(s)
	switch {
	case len(s) == 0:
	case s.all():
		l.whole.Lock()
	default:
		l.whole.RLock()
		s.each(l, lock)
	}
	return s
}

// release undoes take: unlock is the release of the stripes' lock.
func (s lockSet) release(l *keyLocks, unlock func(*sync.RWMutex)) {
	switch {
	case len(s) == 0:
	case s.all():
		l.whole.Unlock()
	default:
		s.each(l, unlock)
		l.whole.RUnlock()
	}
}

// all reports whether the set is allStripes'.
func (s lockSet) all() bool { return len(s) > 0 && s[len(s)-1] == everyStripe }

func (s lockSet) each(l *keyLocks, f func(*sync.RWMutex)) {
	for _, i := range s {
		f(&l.stripes[i])
	}
}

// allStripes returns the set that stands for every stripe, reusing set's
// memory.
func allStripes(set lockSet) lockSet { return append(set[:0], everyStripe) }

// lock takes the stripes of every step-th key in keys and returns what to
// pass to unlock. Inside EXEC it takes nothing: EXEC holds them already.
func (c *conn) lock(keys [][]byte, step int) lockSet {
	if c.pending.open && c.lockDeferred(keys, step) {
		// Held until the pending batch commits: no SWAPDB or FLUSHDB,
		// which take every stripe, comes in between.
		c.useDB()
		return nil
	}
	if c.inExec() {
		return nil
	}
	c.doneReading()
	locks := c.s.ks.locks
	set := c.stripes[:0]
	for i := 0; i < len(keys); i += step {
		set = set.add(locks, keys[i])
	}
	set = set.lock(locks)
	c.stripes = set
	c.useDB()
	return set
}

// lockAll takes every stripe, as lock does for keys.
func (c *conn) lockAll() lockSet {
	c.leaveDeferring()
	if c.inExec() {
		return nil
	}
	c.doneReading()
	set := allStripes(c.stripes).lock(c.s.ks.locks)
	c.stripes = set
	c.useDB()
	return set
}

func (c *conn) unlock(set lockSet) {
	if set == nil {
		return // nothing taken, or held by the pending batch
	}
	set.unlock(c.s.ks.locks)
	c.stripes = set[:0]
}

// lockBlind takes key's stripe shared, for a write that reads nothing
// (see keyLocks); unlockBlind releases it. A write deferred in a pipeline
// leaves it to the pending batch, which holds it until its commit.
func (c *conn) lockBlind(key []byte) lockSet {
	if c.inExec() {
		return nil
	}
	if c.pending.open && c.lockBlindDeferred(key) {
		// Held until the pending batch commits: no SWAPDB or FLUSHDB,
		// which take every stripe, comes in between.
		c.useDB()
		return nil
	}
	c.doneReading()
	set := c.stripes[:0].add(c.s.ks.locks, key).lockShared(c.s.ks.locks)
	c.stripes = set
	c.useDB()
	return set
}

func (c *conn) unlockBlind(set lockSet) {
	if set == nil {
		return // nothing taken: see lockBlind
	}
	set.unlockShared(c.s.ks.locks)
	c.stripes = set[:0]
}
