package lsmgo

import (
	"errors"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/memtable"
	"github.com/lsmgo-dev/lsmgo/internal/sstable"
)

// MaxEntrySize is the most bytes a key and its value may hold together in
// one write. A table stores each entry whole, with an 8-byte trailer after
// the key and, for SetWithExpiry, the expiry before the value, and refuses
// entries over sstable.MaxEntrySize; the limit leaves room for both, so
// the same one holds for Set and SetWithExpiry, and every write the DB
// accepts can later be flushed and compacted.
const MaxEntrySize = sstable.MaxEntrySize - trailerLen - base.ExpiryLen

// trailerLen is the size of the sequence number and kind that follow the
// user key in an internal key (base.InternalKey.Size).
const trailerLen = 8

// maxBatchMemSize bounds memSizeEstimate of one batch. A batch too big for
// the standard memtable gets one of twice its estimate (newMemTable, and
// recovery likewise), and no memtable can be larger than
// memtable.MaxCapacity.
const maxBatchMemSize = memtable.MaxCapacity / 2

// Batch collects writes that Apply commits atomically: after a crash either
// all of them are present or none. A Batch is not safe for concurrent use.
// It copies keys and values, so callers may reuse their buffers at once.
//
// A write the DB could not store (a key and value over MaxEntrySize, or one
// that would make the batch too large for a memtable) is not added: the
// batch keeps the first such error, returned by Err, and Apply returns it
// without writing any of the batch.
type Batch struct {
	repr []byte
	err  error
}

// NewBatch returns an empty batch.
func (db *DB) NewBatch() *Batch { return &Batch{repr: batchrepr.New()} }

// Set adds a write of key with value.
func (b *Batch) Set(key, value []byte) {
	if b.admit(base.KindSet, len(key), len(value)) {
		b.repr = batchrepr.Append(b.repr, base.KindSet, key, value)
	}
}

// SetWithExpiry adds a write of key with value that reads as absent from
// expireAt on.
func (b *Batch) SetWithExpiry(key, value []byte, expireAt time.Time) {
	if !b.admit(base.KindSetExpiry, len(key), len(value)) {
		return
	}
	v := base.EncodeExpiryValue(make([]byte, 0, base.ExpiryLen+len(value)), expireAt.UnixMilli(), value)
	b.repr = batchrepr.Append(b.repr, base.KindSetExpiry, key, v)
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	if b.admit(base.KindDelete, len(key), 0) {
		b.repr = batchrepr.Append(b.repr, base.KindDelete, key, nil)
	}
}

// admit reports whether a write of kind with a key and (user) value of the
// given lengths may join the batch, and records why not otherwise. It runs
// before anything is copied, so an oversized value costs no memory.
func (b *Batch) admit(kind base.Kind, keyLen, valueLen int) bool {
	if b.err != nil {
		return false
	}
	if keyLen+valueLen > MaxEntrySize {
		b.err = fmt.Errorf("%w: key of %d bytes and value of %d bytes exceed the limit of %d bytes for a key and value together (MaxEntrySize)",
			ErrValueTooLarge, keyLen, valueLen, MaxEntrySize)
		return false
	}
	stored := valueLen
	if kind == base.KindSetExpiry {
		stored += base.ExpiryLen
	}
	// memSizeEstimate of the batch with the write added.
	need := len(b.repr) + batchrepr.RecordLen(kind, keyLen, stored) + (b.Count()+1)*memEntryOverhead
	if need > maxBatchMemSize {
		b.err = fmt.Errorf("%w: a batch of %d writes and %d bytes would need %d bytes of memtable, over the limit of %d; commit it in smaller batches",
			ErrValueTooLarge, b.Count()+1, len(b.repr)+batchrepr.RecordLen(kind, keyLen, stored), need, maxBatchMemSize)
		return false
	}
	return true
}

// Err returns why a write was refused (see Batch), or nil.
func (b *Batch) Err() error { return b.err }

// Count is the number of writes in the batch.
func (b *Batch) Count() int { return int(batchrepr.Count(b.repr)) }

// Len is the encoded size of the batch in bytes.
func (b *Batch) Len() int { return len(b.repr) }

// Reset empties the batch for reuse, forgetting a refused write.
func (b *Batch) Reset() {
	b.repr = b.repr[:batchrepr.HeaderLen]
	clear(b.repr)
	b.err = nil
}

// checkWALBatch validates a batch read from a WAL: every record must
// decode, and the DB must be able to flush it: no entry larger than a
// table can hold, and not too large for a memtable. Versions that did not
// check these limits at commit could write such a batch (a SETRANGE to
// offset 512 MiB-1 through the server did). The limits are the tables'
// and memtables' own, not MaxEntrySize: an entry within them is recovered
// even if Set would refuse it today.
func checkWALBatch(rec []byte) error {
	r, err := batchrepr.NewReader(rec)
	if err != nil {
		return err
	}
	if need := memSizeEstimate(rec); need > maxBatchMemSize {
		return fmt.Errorf("%w: batch of %d writes needs %d bytes of memtable, over the limit of %d",
			ErrValueTooLarge, batchrepr.Count(rec), need, maxBatchMemSize)
	}
	for {
		_, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if n := len(key) + trailerLen + len(value); n > sstable.MaxEntrySize {
			return fmt.Errorf("%w: key %s: entry of %d bytes exceeds the %d bytes a table can hold",
				ErrValueTooLarge, quoteKey(key), n, sstable.MaxEntrySize)
		}
	}
}

// walRecordError reports a WAL record that recovery cannot replay, found
// by checkBatch at offset off of WAL name. A record that does not decode
// is corruption; one too large to flush is not damage, and the error says
// what to do about it.
func walRecordError(name string, off int64, err error) error {
	if errors.Is(err, ErrValueTooLarge) {
		return fmt.Errorf("lsmgo: WAL %s, record at offset %d: %w; "+
			"a version that did not check this limit acknowledged it, and this version cannot flush it to a table, "+
			"so Open stops before changing anything: keep the directory, and open it with a version that stores large values in blob files",
			name, off, err)
	}
	return base.Corruptf(name, off, "WAL record: %v", err)
}

// quoteKey formats a key for an error message, cut short when long: keys
// can be hundreds of megabytes.
func quoteKey(key []byte) string {
	const maxShown = 32
	if len(key) > maxShown {
		return fmt.Sprintf("%q... (%d bytes)", key[:maxShown], len(key))
	}
	return fmt.Sprintf("%q", key)
}
