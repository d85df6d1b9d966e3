package lsmgo

import (
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
)

// Batch collects writes that Apply commits atomically: after a crash either
// all of them are present or none. A Batch is not safe for concurrent use.
// It copies keys and values, so callers may reuse their buffers at once.
type Batch struct {
	repr []byte
}

// NewBatch returns an empty batch.
func (db *DB) NewBatch() *Batch { return &Batch{repr: batchrepr.New()} }

// Set adds a write of key with value.
func (b *Batch) Set(key, value []byte) {
	b.repr = batchrepr.Append(b.repr, base.KindSet, key, value)
}

// SetWithExpiry adds a write of key with value that reads as absent from
// expireAt on.
func (b *Batch) SetWithExpiry(key, value []byte, expireAt time.Time) {
	v := base.EncodeExpiryValue(make([]byte, 0, base.ExpiryLen+len(value)), expireAt.UnixMilli(), value)
	b.repr = batchrepr.Append(b.repr, base.KindSetExpiry, key, v)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	b.repr = batchrepr.Append(b.repr, base.KindDelete, key, nil)
}

// Count is the number of writes in the batch.
func (b *Batch) Count() int { return int(batchrepr.Count(b.repr)) }

// Len is the encoded size of the batch in bytes.
func (b *Batch) Len() int { return len(b.repr) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() {
	b.repr = b.repr[:batchrepr.HeaderLen]
	clear(b.repr)
}
