// Package memtable owns the in-memory write buffer: a concurrent skiplist
// of internal keys and values, all stored in one preallocated arena.
//
// Nodes live in the arena and link to each other by uint32 offsets, so the
// garbage collector scans nothing however many entries the table holds.
// A node of height h is laid out as
//
//	next [h]uint32 (level h-1 first) | abbrev uint64 | keyLen uint32 | valueLen uint32 | key | value
//
// and addressed by the offset of abbrev, so its level-l link lies 4*(l+1)
// bytes before that and its key at a fixed distance after it. key is the
// encoded internal key (user key + 8-byte trailer); abbrev is the user
// key's first 8 bytes as a big-endian number (see abbreviate). A search
// decides most comparisons from abbrev, which shares a cache line with
// the links it follows next: each node visited on the way down costs one
// cache miss instead of two (a header, then the key it locates). The list
// is singly linked; Prev searches for the predecessor from the top.
//
// Concurrency: Add may run from many goroutines at once and takes no lock.
// A node's key and value are written before the node is published by an
// atomic compare-and-swap of its predecessor's level-0 link, and readers
// follow links with atomic loads, so a reader never sees a half-written
// node. Nodes are never removed, which is what makes lock-free insertion
// simple: a predecessor found once stays a valid place to resume a search.
//
// Invariants: entries are ordered by base.CompareInternal; no two entries
// share an internal key; an Add that fails leaves no trace in the list.
//
// Lifetimes: slices returned by Get and by iterators alias the arena. They
// are immutable and remain valid for as long as the Memtable is referenced.
package memtable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/lsmgo-dev/lsmgo/internal/arena"
	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/bloom"
)

// MaxCapacity is the largest capacity New and NewMapped accept.
const MaxCapacity = arena.MaxCapacity

// ErrFull is returned by Add when the entry does not fit in the remaining
// arena space; the memtable is unchanged.
var ErrFull = errors.New("memtable: full")

// ErrDuplicate is returned by Add when an entry with the same user key and
// trailer is already present; the commit pipeline assigns unique sequence
// numbers, so this indicates a bug upstream.
var ErrDuplicate = errors.New("memtable: duplicate internal key")

const (
	// maxHeight bounds the tower height. With a 1/2 promotion chance, 24
	// levels keep searches logarithmic up to ~16M entries (a 32 MiB
	// memtable of 200-byte entries holds 180k); past that the top level
	// only grows longer.
	maxHeight = 24

	headerLen = 16 // abbrev, keyLen, valueLen
	linkSize  = 4
)

// Memtable is a sorted, append-only table of internal keys and values.
type Memtable struct {
	arena  *arena.Arena
	head   uint32        // sentinel node of maxHeight with an empty key
	height atomic.Uint32 // levels in use; only ever grows
	count  atomic.Int64
	// filter is a blocked bloom filter over the user keys added. Get
	// consults it before descending the list: most point reads are for
	// keys the memtable lacks (they live in tables, or nowhere), and a
	// descent costs one cache miss per level where the filter costs one.
	filter []atomic.Uint64
}

const (
	// filterBytesPerEntry is the smallest entry the filter is sized for;
	// smaller entries fill it past its design load and raise false
	// positives, never false negatives.
	filterBytesPerEntry = 64
	filterBitsPerEntry  = 10
	filterBlockWords    = 8 // 512 bits: one cache line
	filterProbes        = 6
)

// New returns an empty memtable whose arena holds capacity bytes. The
// capacity is raised to the minimum needed for the list's head node; it
// must not exceed math.MaxUint32, since nodes are addressed by uint32.
func New(capacity int) *Memtable { return newMemtable(capacity, arena.New) }

// NewMapped is New with the arena outside the Go heap (see
// arena.NewMapped). The caller must Free the memtable once nothing reads
// it.
func NewMapped(capacity int) *Memtable { return newMemtable(capacity, arena.NewMapped) }

func newMemtable(capacity int, newArena func(int) *arena.Arena) *Memtable {
	headSize := uint32(linkSize*maxHeight + headerLen)
	// One reserved byte plus worst-case alignment padding precede the head.
	capacity = max(capacity, int(headSize)+linkSize)
	blocks := max(1, capacity/filterBytesPerEntry*filterBitsPerEntry/(64*filterBlockWords))
	m := &Memtable{arena: newArena(capacity), filter: make([]atomic.Uint64, blocks*filterBlockWords)}
	m.initHead()
	return m
}

// Free releases the arena of a memtable from NewMapped (a heap memtable is
// left to the garbage collector). Nothing may read the memtable, or a
// slice it returned, afterwards.
func (m *Memtable) Free() { m.arena.Free() }

// Reset empties the memtable so that its arena and filter serve again:
// a DB rotating memtables at hundreds of MB/s would otherwise leave a
// trail of garbage arenas that inflate the heap until the GC catches up.
// Nothing may still read the memtable, or hold a slice it returned, when
// Reset is called.
func (m *Memtable) Reset() {
	m.arena.Reset()
	clear(m.filter)
	m.count.Store(0)
	m.initHead()
}

// Discard is Reset that also gives the pages of a NewMapped memtable's
// arena back to the OS (see arena.Discard), for a memtable kept idle.
func (m *Memtable) Discard() {
	m.arena.Discard()
	m.Reset()
}

// initHead allocates the list's head node in an empty arena. Its links are
// stored explicitly: a reset arena still holds old bytes.
func (m *Memtable) initHead() {
	start, ok := m.arena.Alloc(uint32(linkSize*maxHeight+headerLen), linkSize)
	if !ok {
		panic("memtable: arena cannot hold the head node")
	}
	// The head is never compared with, so its abbrev and lengths are
	// never read.
	head := start + linkSize*maxHeight
	for l := range maxHeight {
		m.link(head, l).Store(0)
	}
	m.head = head
	m.height.Store(1)
}

// Add inserts an entry, copying key and value into the arena. It is safe to
// call from many goroutines at once and does not allocate. It returns
// ErrFull when the entry does not fit and ErrDuplicate when the internal key
// is already present.
func (m *Memtable) Add(key base.InternalKey, value []byte) error {
	var prev, next [maxHeight]uint32
	sk := makeSearchKey(key.UserKey, key.Trailer)
	listHeight := int(m.height.Load())
	before, bound := m.head, uint32(0)
	for l := listHeight - 1; l >= 0; l-- {
		var found bool
		prev[l], next[l], found = m.findSplice(&sk, l, before, bound)
		if found {
			return ErrDuplicate
		}
		before, bound = prev[l], next[l]
	}
	h := randomHeight()
	for l := listHeight; l < h; l++ {
		prev[l], next[l] = m.head, 0
	}
	nd, ok := m.newNode(key, sk.abbrev, value, h)
	if !ok {
		return ErrFull
	}
	// The filter learns the key before the node is linked, so a reader
	// that can find the node also passes the filter.
	m.filterAdd(key.UserKey)
	for {
		cur := m.height.Load()
		if uint32(h) <= cur || m.height.CompareAndSwap(cur, uint32(h)) {
			break
		}
	}
	// Linking bottom-up means a node reachable at level l is already
	// reachable at every level below it, which searches rely on when they
	// descend.
	for l := 0; l < h; l++ {
		for {
			m.link(nd, l).Store(next[l])
			if m.link(prev[l], l).CompareAndSwap(next[l], nd) {
				break
			}
			// Something was inserted after prev[l]; prev[l] still sorts
			// before key, so resume the search there.
			var found bool
			prev[l], next[l], found = m.findSplice(&sk, l, prev[l], 0)
			// An equal key can only appear at level 0: above it the node
			// would have blocked our own level-0 link.
			if found && l == 0 {
				return ErrDuplicate
			}
		}
	}
	m.count.Add(1)
	return nil
}

// Get returns the newest entry for userKey with a sequence number below
// readSeq. found is true for tombstones too (kind base.KindDelete, empty
// value); the caller decides what a tombstone means. value aliases the
// arena.
func (m *Memtable) Get(userKey []byte, readSeq base.SeqNum) (value []byte, kind base.Kind, found bool) {
	if readSeq == 0 || !m.filterMayContain(userKey) {
		return nil, 0, false
	}
	sk := makeSearchKey(userKey, seekTrailer(readSeq))
	n := m.findGE(&sk)
	if n == 0 {
		return nil, 0, false
	}
	k, v := m.entry(n)
	ikey := decodeKey(k)
	if !bytes.Equal(ikey.UserKey, userKey) {
		return nil, 0, false
	}
	return v, ikey.Kind(), true
}

// filterBlock returns the first word of the key's filter block and the
// hash bits that pick its probes.
func (m *Memtable) filterBlock(userKey []byte) (block []atomic.Uint64, probeBits uint64) {
	h := bloom.Hash(userKey)
	nBlocks := uint64(len(m.filter) / filterBlockWords)
	b := (h >> 32) * nBlocks >> 32
	return m.filter[b*filterBlockWords : (b+1)*filterBlockWords], h*0x9e3779b97f4a7c15 | 1
}

func (m *Memtable) filterAdd(userKey []byte) {
	block, bits := m.filterBlock(userKey)
	for range filterProbes {
		bit := bits & 511
		if w := &block[bit>>6]; w.Load()&(1<<(bit&63)) == 0 {
			w.Or(1 << (bit & 63))
		}
		bits >>= 9
	}
}

func (m *Memtable) filterMayContain(userKey []byte) bool {
	block, bits := m.filterBlock(userKey)
	for range filterProbes {
		bit := bits & 511
		if block[bit>>6].Load()&(1<<(bit&63)) == 0 {
			return false
		}
		bits >>= 9
	}
	return true
}

// seekTrailer returns the largest trailer visible at readSeq (> 0): every
// entry with seq < readSeq has a trailer at most this, and in descending
// trailer order those entries come at or after it.
func seekTrailer(readSeq base.SeqNum) uint64 {
	if readSeq > base.SeqNumMax {
		return math.MaxUint64
	}
	return uint64(readSeq)<<8 - 1
}

// Size returns the bytes used in the arena, including node overhead.
func (m *Memtable) Size() int { return int(m.arena.Size()) }

// Capacity returns the arena's size in bytes.
func (m *Memtable) Capacity() int { return int(m.arena.Capacity()) }

// Empty reports whether no entry has been added.
func (m *Memtable) Empty() bool { return m.count.Load() == 0 }

// Len returns the number of entries. Under concurrent Adds it may lag
// entries that are already visible to readers.
func (m *Memtable) Len() int { return int(m.count.Load()) }

// newNode allocates and fills a node of height h whose links are
// unset. ok is false when the arena is full.
func (m *Memtable) newNode(key base.InternalKey, abbrev uint64, value []byte, h int) (uint32, bool) {
	keyLen := uint64(key.Size())
	size := uint64(linkSize*h+headerLen) + keyLen + uint64(len(value))
	if size > math.MaxUint32 {
		return 0, false
	}
	start, ok := m.arena.Alloc(uint32(size), linkSize)
	if !ok {
		return 0, false
	}
	nd := start + uint32(linkSize*h)
	hdr := m.arena.Bytes(nd, headerLen)
	binary.LittleEndian.PutUint64(hdr[0:], abbrev)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(keyLen))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(value)))
	key.Encode(m.arena.Bytes(nd+headerLen, uint32(keyLen)))
	copy(m.arena.Bytes(nd+headerLen+uint32(keyLen), uint32(len(value))), value)
	return nd, true
}

// link returns node nd's next-pointer at level l.
func (m *Memtable) link(nd uint32, l int) *atomic.Uint32 {
	return m.arena.Uint32(nd - uint32(linkSize*(l+1)))
}

// abbrev returns node nd's abbreviated user key. It is read without an
// atomic: it was written before the link that led the reader here was
// published, and never changes afterwards.
func (m *Memtable) abbrev(nd uint32) uint64 {
	return binary.LittleEndian.Uint64(m.arena.Bytes(nd, 8))
}

// entry returns a node's encoded internal key and its value.
func (m *Memtable) entry(nd uint32) (key, value []byte) {
	hdr := m.arena.Bytes(nd, headerLen)
	keyLen := binary.LittleEndian.Uint32(hdr[8:])
	valueLen := binary.LittleEndian.Uint32(hdr[12:])
	return m.arena.Bytes(nd+headerLen, keyLen), m.arena.Bytes(nd+headerLen+keyLen, valueLen)
}

func decodeKey(k []byte) base.InternalKey {
	n := len(k) - 8
	return base.InternalKey{UserKey: k[:n:n], Trailer: binary.LittleEndian.Uint64(k[n:])}
}

// abbreviate returns a user key's first 8 bytes as a big-endian number,
// zero-padded. It preserves order weakly: a < b implies abbreviate(a) <=
// abbreviate(b), so unequal abbreviations order their keys and equal ones
// (a shared 8-byte prefix, or a short key and its zero-padded extension)
// say nothing. lsmgo-bench's keys, and any key that leads with a number or
// a hash, differ within their first 8 bytes; keys with a longer common
// prefix fall back to comparing bytes.
func abbreviate(userKey []byte) uint64 {
	if len(userKey) >= 8 {
		return binary.BigEndian.Uint64(userKey)
	}
	var b [8]byte
	copy(b[:], userKey)
	return binary.BigEndian.Uint64(b[:])
}

// searchKey is an internal key being searched for, with its user key
// abbreviated once per search rather than once per node.
type searchKey struct {
	userKey []byte
	abbrev  uint64
	trailer uint64
}

func makeSearchKey(userKey []byte, trailer uint64) searchKey {
	return searchKey{userKey: userKey, abbrev: abbreviate(userKey), trailer: trailer}
}

// compare orders node nd against sk.
func (m *Memtable) compare(nd uint32, sk *searchKey) int {
	if a := m.abbrev(nd); a != sk.abbrev {
		if a < sk.abbrev {
			return -1
		}
		return 1
	}
	k, _ := m.entry(nd)
	n := len(k) - 8
	if c := bytes.Compare(k[:n], sk.userKey); c != 0 {
		return c
	}
	t := binary.LittleEndian.Uint64(k[n:])
	switch {
	case t > sk.trailer:
		return -1
	case t < sk.trailer:
		return 1
	}
	return 0
}

// findSplice walks level l from before, which must sort before the target,
// and returns the last node before the target and the first node at or
// after it (0 at the end). found reports that next equals the target.
//
// bound is a node already known to sort after the target (or 0): the
// successor found one level up. Reaching it ends the walk without touching
// its memory again, which measured 12% off Get on 100k entries, since
// every comparison there is likely a cache miss.
func (m *Memtable) findSplice(sk *searchKey, l int, before, bound uint32) (prev, next uint32, found bool) {
	for {
		next = m.link(before, l).Load()
		if next == bound {
			return before, next, false
		}
		if c := m.compare(next, sk); c >= 0 {
			return before, next, c == 0
		}
		before = next
	}
}

// findLT returns the last node before sk, or the head.
func (m *Memtable) findLT(sk *searchKey) uint32 {
	before, bound := m.head, uint32(0)
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		before, bound, _ = m.findSplice(sk, l, before, bound)
	}
	return before
}

// findGE returns the first node at or after sk, or 0.
//
// The level-0 walk from findLT's result matters: an Add may link nodes
// after that predecessor once findLT has returned, and they sort before
// the target (a newer version of userKey, say, which Get must not return).
func (m *Memtable) findGE(sk *searchKey) uint32 {
	_, next, _ := m.findSplice(sk, 0, m.findLT(sk), 0)
	return next
}

// findLast returns the last node, or the head when the list is empty.
func (m *Memtable) findLast() uint32 {
	nd := m.head
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for next := m.link(nd, l).Load(); next != 0; next = m.link(nd, l).Load() {
			nd = next
		}
	}
	return nd
}

// randomHeight draws a tower height: level k+1 holds about half the nodes
// of level k. A promotion chance of 1/4 makes about as many comparisons
// per search (4 per level over half the levels) but more of them on the
// lowest levels, whose nodes are not in cache: with 1/2, BenchmarkAdd-
// and GetEngineKeys took about 10% less CPU (medians of 7 alternated
// runs: 1729 -> 1535 and 2739 -> 2492 ns/op), for 2.7 more bytes of links
// per node (2 on average instead of 1.33).
func randomHeight() int {
	h := 1
	for r := rand.Uint64(); h < maxHeight && r&1 == 0; r >>= 1 {
		h++
	}
	return h
}
