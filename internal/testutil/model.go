// Package testutil holds what the engine's randomized tests share: a
// reference model of the DB's semantics (an ordered map with snapshots and
// TTL) and generators of keys and values; and, for the tests of servers, a
// log buffer safe for concurrent writers.
//
// The model is deliberately naive — a sorted slice and a linear copy on
// snapshot — so that it is obviously right; tests compare the engine
// against it operation by operation. Invariants: a Model's entries are
// sorted by key with no duplicates; values handed to a Model are never
// modified afterwards (the model and its snapshots share them); a snapshot
// never changes after it is taken.
package testutil

import (
	"bytes"
	"slices"
)

// Entry is one key of the model with its value and expiry.
type Entry struct {
	Key   []byte
	Value []byte
	// ExpireAtMs is the Unix-millisecond time from which the key reads as
	// absent; 0 means it never expires.
	ExpireAtMs int64
}

// Live reports whether the entry is visible at nowMs. The engine treats an
// entry as expired when its expiry is at or before the clock, so the model
// does too.
func (e Entry) Live(nowMs int64) bool { return e.ExpireAtMs == 0 || e.ExpireAtMs > nowMs }

// Model is an ordered map from key to Entry with the DB's read semantics:
// deletes remove, expired keys read as absent, snapshots are frozen copies.
// It is not safe for concurrent use.
type Model struct {
	entries []Entry
	// shared is set when a snapshot may share entries' backing array, so
	// the next write copies it first (copy on write keeps Snapshot O(1)).
	shared bool
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{} }

// Len is the number of keys held, expired ones included.
func (m *Model) Len() int { return len(m.entries) }

func (m *Model) find(key []byte) (int, bool) {
	return slices.BinarySearchFunc(m.entries, key, func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
}

func (m *Model) own() {
	if m.shared {
		m.entries = slices.Clone(m.entries)
		m.shared = false
	}
}

// Set writes key=value without expiry. The model keeps key and value; the
// caller must not modify them afterwards.
func (m *Model) Set(key, value []byte) { m.SetWithExpiry(key, value, 0) }

// SetWithExpiry writes key=value expiring at expireAtMs (0: never).
func (m *Model) SetWithExpiry(key, value []byte, expireAtMs int64) {
	m.own()
	e := Entry{Key: key, Value: value, ExpireAtMs: expireAtMs}
	if i, ok := m.find(key); ok {
		m.entries[i] = e
	} else {
		m.entries = slices.Insert(m.entries, i, e)
	}
}

// Delete removes key; deleting an absent key does nothing.
func (m *Model) Delete(key []byte) {
	if i, ok := m.find(key); ok {
		m.own()
		m.entries = slices.Delete(m.entries, i, i+1)
	}
}

// Get returns the entry of key if it is present and live at nowMs.
func (m *Model) Get(key []byte, nowMs int64) (Entry, bool) {
	if i, ok := m.find(key); ok && m.entries[i].Live(nowMs) {
		return m.entries[i], true
	}
	return Entry{}, false
}

// Snapshot returns a frozen copy of the model: later writes to m do not
// change it. Writing to the snapshot itself is allowed and does not change
// m either.
func (m *Model) Snapshot() *Model {
	m.shared = true
	return &Model{entries: m.entries, shared: true}
}

// Range returns the live entries with lower <= key < upper at nowMs, in
// key order; a nil bound is unbounded. The result shares the model's keys
// and values.
func (m *Model) Range(lower, upper []byte, nowMs int64) []Entry {
	lo, hi := 0, len(m.entries)
	if lower != nil {
		lo, _ = m.find(lower)
	}
	if upper != nil {
		hi, _ = m.find(upper)
	}
	var out []Entry
	for _, e := range m.entries[lo:max(lo, hi)] {
		if e.Live(nowMs) {
			out = append(out, e)
		}
	}
	return out
}

// NewIter returns an iterator over the model's live entries within
// [lower, upper) as of now; later writes to m do not affect it, matching
// the engine's iterators, which read at their creation's sequence number
// and judge expiry by the clock at creation.
func (m *Model) NewIter(lower, upper []byte, nowMs int64) *Iter {
	return &Iter{entries: m.Range(lower, upper, nowMs), pos: -1}
}

// Iter mirrors the positioning rules of the engine's Iterator over a fixed
// list of entries already cut to the bounds (so seeks outside them land
// where the engine's clamped seeks do), and Next or Prev on an exhausted
// (invalid) iterator stay invalid rather than restarting.
type Iter struct {
	entries []Entry
	// pos is the current index; -1 or len(entries) means invalid.
	pos int
}

// Valid reports whether the iterator is on an entry.
func (it *Iter) Valid() bool { return it.pos >= 0 && it.pos < len(it.entries) }

// Entry returns the current entry; only when Valid.
func (it *Iter) Entry() Entry { return it.entries[it.pos] }

// First moves to the first entry.
func (it *Iter) First() bool {
	it.pos = 0
	return it.Valid()
}

// Last moves to the last entry.
func (it *Iter) Last() bool {
	it.pos = len(it.entries) - 1
	return it.Valid()
}

// SeekGE moves to the first entry with key >= key.
func (it *Iter) SeekGE(key []byte) bool {
	it.pos, _ = slices.BinarySearchFunc(it.entries, key, func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
	return it.Valid()
}

// SeekLT moves to the last entry with key < key.
func (it *Iter) SeekLT(key []byte) bool {
	i, _ := slices.BinarySearchFunc(it.entries, key, func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
	it.pos = i - 1
	return it.Valid()
}

// Next moves to the next entry; on an invalid iterator it does nothing.
func (it *Iter) Next() bool {
	if !it.Valid() {
		return false
	}
	it.pos++
	if !it.Valid() {
		it.pos = len(it.entries)
	}
	return it.Valid()
}

// Prev moves to the previous entry; on an invalid iterator it does nothing.
func (it *Iter) Prev() bool {
	if !it.Valid() {
		return false
	}
	it.pos--
	return it.Valid()
}
