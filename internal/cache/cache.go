// Package cache holds the block cache: decompressed, checksum-verified
// table blocks keyed by (file number, block offset), kept within a byte
// budget.
//
// The cache is split into shards, each an LRU list under its own mutex, so
// concurrent readers of different blocks rarely contend. Each shard owns an
// equal part of the budget.
//
// Invariants:
//   - A shard's charged size never exceeds its part of the budget: a block
//     larger than a whole shard is not cached at all.
//   - A block is immutable once inserted. Get hands out the stored slice
//     itself; callers must never write to it. Eviction only drops the
//     cache's reference, so a slice a reader still holds stays valid.
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
// length: the entry struct, its list links and its two map slots, rounded
// up. Charging it keeps a cache full of tiny blocks from overrunning the
// real memory budget.
const EntryOverhead = 96

// Cache is a sharded LRU block cache. The zero value is not usable; call
// New.
type Cache struct {
	shards        [numShards]shard
	shardCapacity int64
}

type key struct {
	fileNum base.FileNum
	offset  uint64
}

type entry struct {
	key        key
	block      []byte
	charge     int64
	prev, next *entry
}

// shard is one LRU list. The list is circular around head: head.next is
// the most recently used entry, head.prev the next to evict.
type shard struct {
	mu       sync.Mutex
	files    map[base.FileNum]map[uint64]*entry
	head     entry
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
		s.files = make(map[base.FileNum]map[uint64]*entry)
		s.head.next, s.head.prev = &s.head, &s.head
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

// Get returns the block cached for (fileNum, offset). The returned slice
// is shared and must not be modified.
func (c *Cache) Get(fileNum base.FileNum, offset uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	k := key{fileNum, offset}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.files[fileNum][offset]
	if e == nil {
		s.misses++
		return nil, false
	}
	s.hits++
	s.unlink(e)
	s.pushFront(e)
	return e.block, true
}

// Set caches block for (fileNum, offset), replacing any block cached there.
// The cache keeps block itself, not a copy: the caller must not modify it
// afterwards. The block is charged len(block)+EntryOverhead bytes; least
// recently used blocks are evicted to make room.
func (c *Cache) Set(fileNum base.FileNum, offset uint64, block []byte) {
	if c == nil {
		return
	}
	k := key{fileNum, offset}
	s := c.shardFor(k)
	charge := int64(len(block)) + EntryOverhead
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.files[fileNum][offset]; old != nil {
		s.remove(old)
	}
	if charge > s.capacity {
		return
	}
	for s.size+charge > s.capacity {
		s.remove(s.head.prev)
	}
	e := &entry{key: k, block: block, charge: charge}
	m := s.files[fileNum]
	if m == nil {
		m = make(map[uint64]*entry)
		s.files[fileNum] = m
	}
	m[offset] = e
	s.pushFront(e)
	s.size += charge
	s.count++
}

// EvictFile drops every block of fileNum, as when the table is deleted.
func (c *Cache) EvictFile(fileNum base.FileNum) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, e := range s.files[fileNum] {
			s.unlink(e)
			s.size -= e.charge
			s.count--
		}
		delete(s.files, fileNum)
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

func (s *shard) remove(e *entry) {
	s.unlink(e)
	m := s.files[e.key.fileNum]
	delete(m, e.key.offset)
	if len(m) == 0 {
		delete(s.files, e.key.fileNum)
	}
	s.size -= e.charge
	s.count--
}

func (s *shard) unlink(e *entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (s *shard) pushFront(e *entry) {
	e.prev = &s.head
	e.next = s.head.next
	e.next.prev = e
	s.head.next = e
}
