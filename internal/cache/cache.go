// Package cache holds the block cache: decompressed, checksum-verified
// table blocks keyed by (file number, block offset), kept within a byte
// budget.
//
// The cache is split into shards, each under its own mutex, so concurrent
// readers of different blocks rarely contend. Each shard owns an equal
// part of the budget and evicts with the CLOCK algorithm: its entries sit
// in one slice, a hit only sets the entry's referenced bit, and eviction
// sweeps a hand over the slice, clearing set bits and evicting the first
// entry whose bit is clear. Unlike an LRU list, a hit writes nothing
// outside its own entry: relinking list neighbours cost a cache miss or
// two per hit, a tenth of a cached point read. Newly inserted blocks start
// unreferenced, so blocks read once (a scan) leave before blocks read
// twice.
//
// Invariants:
//   - A shard's charged size never exceeds its part of the budget: a block
//     larger than a whole shard is not cached at all.
//   - A block is immutable once inserted. Get hands out the stored block
//     itself with a reference the caller must Release; callers never
//     write to it. Eviction only drops the cache's reference, so a block a
//     reader still holds stays valid until that reader releases it.
//   - All methods are safe for concurrent use, and a nil *Cache is a
//     valid, disabled cache.
package cache

import (
	"sync"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// numShards is a power of two so a shard is picked from the top bits of a
// hash. Sixteen keeps lock contention low on the core counts we target
// while leaving each shard a useful share of small budgets.
const (
	shardBits = 4
	numShards = 1 << shardBits
)

// EntryOverhead is the bytes charged per cached block on top of its
// length: the entry, its map slot and its share of the slices' spare
// capacity, rounded up. Charging it keeps a cache full of tiny blocks from
// overrunning the real memory budget.
const EntryOverhead = 96

// Cache is a sharded CLOCK block cache. The zero value is not usable; call
// New.
type Cache struct {
	shards        [numShards]shard
	shardCapacity int64
}

type key struct {
	fileNum base.FileNum
	offset  uint64
}

// Keys whose file number and offset fit these widths are packed into one
// uint64 and found in a map with a 64-bit key, which hashes several times
// faster than a map with a two-word key. 2^28 files and 64 GiB tables are
// far beyond what a DB reaches; anything larger goes to the shard's
// overflow map, so correctness does not depend on the bounds.
const (
	packedOffsetBits = 36
	packedFileBits   = 64 - packedOffsetBits
)

func (k key) packed() (uint64, bool) {
	if uint64(k.fileNum)>>packedFileBits != 0 || k.offset>>packedOffsetBits != 0 {
		return 0, false
	}
	return uint64(k.fileNum)<<packedOffsetBits | k.offset, true
}

type entry struct {
	key    key
	block  *Block
	charge int64
}

// Slot states. They live apart from the entries, one byte each, so that
// the hand sweeps 64 of them per cache line and only touches the entry it
// evicts.
const (
	slotFree uint8 = iota
	slotLive
	slotReferenced // live, and hit since the hand last passed
)

// shard is one CLOCK ring: entries is the ring, states the state of each
// slot, free lists the free slots, and hand is where the next sweep
// starts.
type shard struct {
	mu       sync.Mutex
	slots    map[uint64]int32 // packed key -> index in entries
	overflow map[key]int32    // keys that do not pack
	entries  []entry
	states   []uint8
	free     []int32
	hand     int
	size     int64
	count    int64
	hits     int64
	misses   int64
	capacity int64
}

// New returns a cache that holds up to capacityBytes of charged blocks. A
// capacity of zero or less disables caching: Get always misses and Set
// stores nothing.
func New(capacityBytes int64) *Cache {
	c := &Cache{shardCapacity: max(capacityBytes, 0) / numShards}
	for i := range c.shards {
		s := &c.shards[i]
		s.slots = make(map[uint64]int32)
		s.capacity = c.shardCapacity
	}
	return c
}

func (c *Cache) shardFor(k key) *shard {
	// The multiplier spreads consecutive offsets and file numbers; the top
	// bits of the product are the best mixed.
	h := (uint64(k.fileNum)*0x9e3779b97f4a7c15 ^ k.offset) * 0xbf58476d1ce4e5b9
	return &c.shards[h>>(64-shardBits)]
}

// Get returns the block cached for (fileNum, offset) with a reference
// the caller must Release. The block is shared and must not be modified.
func (c *Cache) Get(fileNum base.FileNum, offset uint64) (*Block, bool) {
	if c == nil {
		return nil, false
	}
	k := key{fileNum, offset}
	s := c.shardFor(k)
	s.mu.Lock()
	i, ok := s.lookup(k)
	if !ok {
		s.misses++
		s.mu.Unlock()
		return nil, false
	}
	s.hits++
	s.states[i] = slotReferenced
	b := s.entries[i].block
	b.ref()
	s.mu.Unlock()
	return b, true
}

// Set caches block for (fileNum, offset), replacing any block cached there,
// and takes a reference of its own; the caller keeps its own reference and
// must not modify the block afterwards. The block is charged its Charge
// plus EntryOverhead bytes; blocks are evicted to make room.
func (c *Cache) Set(fileNum base.FileNum, offset uint64, block *Block) {
	if c == nil {
		return
	}
	k := key{fileNum, offset}
	s := c.shardFor(k)
	charge := block.Charge() + EntryOverhead
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.lookup(k); ok {
		s.remove(i)
	}
	if charge > s.capacity {
		return
	}
	for s.size+charge > s.capacity {
		s.evictOne()
	}
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		i = int32(len(s.entries))
		s.entries = append(s.entries, entry{})
		s.states = append(s.states, slotFree)
	}
	block.ref()
	s.entries[i] = entry{key: k, block: block, charge: charge}
	s.states[i] = slotLive
	if p, ok := k.packed(); ok {
		s.slots[p] = i
	} else {
		if s.overflow == nil {
			s.overflow = make(map[key]int32)
		}
		s.overflow[k] = i
	}
	s.size += charge
	s.count++
}

// EvictFile drops every block of fileNum, as when the table is deleted.
// It walks every entry, which costs far less than the table's deletion.
func (c *Cache) EvictFile(fileNum base.FileNum) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for j := range s.entries {
			if s.states[j] != slotFree && s.entries[j].key.fileNum == fileNum {
				s.remove(int32(j))
			}
		}
		s.mu.Unlock()
	}
}

// Metrics returns the hit and miss counts since New, and the charged size
// and number of blocks now cached.
func (c *Cache) Metrics() (hits, misses int64, sizeBytes int64, count int64) {
	if c == nil {
		return 0, 0, 0, 0
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		hits += s.hits
		misses += s.misses
		sizeBytes += s.size
		count += s.count
		s.mu.Unlock()
	}
	return hits, misses, sizeBytes, count
}

// Capacity returns the byte budget the cache enforces (the requested
// capacity rounded down to a multiple of the shard count).
func (c *Cache) Capacity() int64 {
	if c == nil {
		return 0
	}
	return c.shardCapacity * numShards
}

func (s *shard) lookup(k key) (int32, bool) {
	if p, ok := k.packed(); ok {
		i, ok := s.slots[p]
		return i, ok
	}
	i, ok := s.overflow[k]
	return i, ok
}

// evictOne advances the hand to the first live, unreferenced entry,
// clearing the referenced bits it passes, and evicts it. The shard must
// hold at least one entry; a sweep ends within two turns of the ring.
func (s *shard) evictOne() {
	for {
		if s.hand >= len(s.states) {
			s.hand = 0
		}
		i := s.hand
		s.hand++
		switch s.states[i] {
		case slotReferenced:
			s.states[i] = slotLive
		case slotLive:
			s.remove(int32(i))
			return
		}
	}
}

func (s *shard) remove(i int32) {
	e := &s.entries[i]
	if p, ok := e.key.packed(); ok {
		delete(s.slots, p)
	} else {
		delete(s.overflow, e.key)
	}
	s.size -= e.charge
	s.count--
	e.block.Release()
	*e = entry{}
	s.states[i] = slotFree
	s.free = append(s.free, i)
}
