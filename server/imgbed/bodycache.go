package imgbed

import (
	"container/list"
	"sync"
)

// bodyCache keeps the bytes of small originals and thumbnails that GETs
// read often, so that ServePlain answers them without opening and reading
// the blob (the engine's value lookup, a pread(2) and the reader's
// allocations: a seventh of a thumbnail GET's CPU).
//
// An entry is named by the blob's metadata key and generation. The bytes
// of a generation are written once and never change (a new upload after
// the last delete, or a new render, gets a new generation), so an entry
// is never stale and nothing is invalidated. It is also never the reason
// an image is served: ServePlain reads the image record and the blob
// metadata from the engine first, on every GET, so a deleted, expired or
// view-limited image is refused before the cache is asked.
//
// The bytes held are bounded (max); the least recently used entries go
// first. A body is kept on its second miss within the last
// bodySeenKeys misses, so a pass over many images read once does not
// evict the hot ones or allocate a copy of each.
type bodyCache struct {
	max int64

	mu    sync.Mutex
	bytes int64
	m     map[string]*list.Element // of *bodyEntry
	lru   list.List                // most recently used first
	seen  map[string]struct{}      // keys that missed once
}

type bodyEntry struct {
	key  string
	body []byte
}

// bodySeenKeys bounds the keys remembered as missed once (about 100 bytes
// each); past it, the set starts again.
const bodySeenKeys = 4096

// newBodyCache returns a cache of at most max bytes of bodies; with max
// ≤ 0 it keeps nothing.
func newBodyCache(max int64) *bodyCache {
	return &bodyCache{max: max, m: make(map[string]*list.Element), seen: make(map[string]struct{})}
}

// get returns the body named k, or nil. The caller must not modify it.
func (c *bodyCache) get(k []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[string(k)]
	if e == nil {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*bodyEntry).body
}

// admit reports, after a miss of k, whether a body of size bytes should
// be kept: on k's second miss, when it fits.
func (c *bodyCache) admit(k []byte, size int64) bool {
	if size > c.max {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[string(k)]; ok {
		delete(c.seen, string(k))
		return true
	}
	if len(c.seen) >= bodySeenKeys {
		clear(c.seen)
	}
	c.seen[string(k)] = struct{}{}
	return false
}

// put keeps body under k, evicting the least recently used bodies past
// max. The cache owns body from then on.
func (c *bodyCache) put(k []byte, body []byte) {
	size := int64(len(body))
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[string(k)] != nil {
		return // a concurrent miss kept it first
	}
	for c.bytes+size > c.max {
		c.remove(c.lru.Back())
	}
	key := string(k)
	c.m[key] = c.lru.PushFront(&bodyEntry{key: key, body: body})
	c.bytes += size
}

func (c *bodyCache) remove(e *list.Element) {
	be := c.lru.Remove(e).(*bodyEntry)
	delete(c.m, be.key)
	c.bytes -= int64(len(be.body))
}

// held returns the bytes of the bodies kept.
func (c *bodyCache) held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
