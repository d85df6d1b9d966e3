package imgbed

import (
	"bytes"
	"errors"
	"hash/maphash"
	"sync"

	"github.com/lsmgo-dev/lsmgo"
)

// decodedCache keeps the decoded form of the JSON values GETs read on
// every request (image records, blob and thumbnail metadata), each with
// the bytes it was decoded from. A read still gets the value from the
// engine, so a delete, an expiry or a replicated change is seen at once;
// it skips only the JSON decode, when the bytes are those already
// decoded. The decode was a fifth of a small GET's CPU, the Get a little.
// T must hold no slices or maps: callers get a copy.
type decodedCache[T any] struct {
	what   string
	seed   maphash.Seed
	shards [decodedShards]decodedShard[T]
}

// decodedShards spreads the lock over concurrent GETs; decodedPerShard
// bounds the memory (4096 entries of about 500 bytes in all).
const (
	decodedShards   = 16
	decodedPerShard = 256
)

type decodedShard[T any] struct {
	mu sync.Mutex
	m  map[string]*decodedEntry[T]
}

type decodedEntry[T any] struct {
	raw []byte
	v   T
}

func newDecodedCache[T any](what string) *decodedCache[T] {
	c := &decodedCache[T]{what: what, seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*decodedEntry[T])
	}
	return c
}

// rawPool holds the buffers values are read into before the comparison.
var rawPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// get reads k from db into v, as getJSON does.
func (c *decodedCache[T]) get(db *lsmgo.DB, k []byte, v *T) error {
	bp := rawPool.Get().(*[]byte)
	defer rawPool.Put(bp)
	raw, err := db.GetAppend((*bp)[:0], k)
	*bp = raw[:0]
	if errors.Is(err, lsmgo.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	sh := &c.shards[maphash.Bytes(c.seed, k)%decodedShards]
	sh.mu.Lock()
	if e := sh.m[string(k)]; e != nil && bytes.Equal(e.raw, raw) {
		*v = e.v
		sh.mu.Unlock()
		return nil
	}
	sh.mu.Unlock()
	// Decoded into the entry, not v: a pointer json takes escapes, and
	// the callers' records then stay on their stacks.
	e := &decodedEntry[T]{}
	if err := decode(raw, &e.v, c.what); err != nil {
		return err
	}
	e.raw = bytes.Clone(raw)
	*v = e.v
	sh.mu.Lock()
	if len(sh.m) >= decodedPerShard {
		for old := range sh.m { // any one: map order is random
			delete(sh.m, old)
			break
		}
	}
	sh.m[string(k)] = e
	sh.mu.Unlock()
	return nil
}
