package lsmgo

import (
	"errors"
	"fmt"
	"time"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/batchrepr"
	"github.com/lsmgo-dev/lsmgo/internal/blob"
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

// MaxValueSize is the largest value a DB with value separation
// (Options.ValueThreshold) accepts; such a value is stored in a blob file,
// and MaxEntrySize then bounds only its key. The bound is set by memory: a
// batch holds one copy of each value it is given, and a read returns one.
const MaxValueSize = 1<<31 - 1

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

	// threshold is the DB's Options.ValueThreshold: a value at least this
	// long is separated (0: none is). A separated value is kept in blobs,
	// in record order, and the repr holds a placeholder record for it of
	// kind KindSetBlob or KindSetExpiryBlob whose value is only the
	// expiry, if any; Apply writes the values to a blob file and encodes
	// the pointers (withPointers). The repr thus stays small, and a value
	// is not copied again to grow it.
	threshold int
	blobs     [][]byte
	blobBytes int
	// alias makes separated values refer to the caller's slices instead
	// of copies: set for the one-write batches of DB.Set, which are
	// applied before the caller gets its slice back (SetNoCopy does the
	// same for one value).
	alias bool
	// replicatedParts, set by ApplyReplicatedBatches, are the replicated
	// batches this one was made of, which Options.OnCommit reports.
	replicatedParts [][]byte
	// resets counts Reset calls, so that an Overlay's index can tell a
	// batch that started over and grew back past it from one that grew.
	resets uint64
	// seq is the sequence number of the first write once committed.
	seq uint64
}

// Seq returns the sequence number Apply (or CommitAsync) gave the batch's
// first write, its others following one by one, or 0 while it is not
// committed: the position Options.OnCommit reported it at, by which a
// primary can tie what it knows of the batch to the batch a replica gets.
func (b *Batch) Seq() uint64 { return b.seq }

// NewBatch returns an empty batch.
func (db *DB) NewBatch() *Batch {
	return &Batch{repr: batchrepr.New(), threshold: db.opts.ValueThreshold}
}

// Set adds a write of key with value.
func (b *Batch) Set(key, value []byte) {
	if b.separates(len(value)) {
		b.setBlob(base.KindSetBlob, key, nil, value, b.alias)
		return
	}
	if b.admit(base.KindSet, len(key), len(value)) {
		b.repr = batchrepr.Append(b.repr, base.KindSet, key, value)
	}
}

// SetNoCopy is Set for a caller that leaves value untouched until the
// batch is applied, reset or dropped: a value the batch separates
// (Options.ValueThreshold) is kept by reference instead of copied; a
// smaller one is copied as by Set. A server holding a large upload in
// memory hands it over this way instead of having every byte copied.
func (b *Batch) SetNoCopy(key, value []byte) {
	if b.separates(len(value)) {
		b.setBlob(base.KindSetBlob, key, nil, value, true)
		return
	}
	b.Set(key, value)
}

// SetWithExpiry adds a write of key with value that reads as absent from
// expireAt on.
func (b *Batch) SetWithExpiry(key, value []byte, expireAt time.Time) {
	if b.separates(len(value)) {
		var prefix [base.ExpiryLen]byte
		b.setBlob(base.KindSetExpiryBlob, key, base.EncodeExpiryValue(prefix[:0], expireAt.UnixMilli(), nil), value, b.alias)
		return
	}
	if !b.admit(base.KindSetExpiry, len(key), len(value)) {
		return
	}
	v := base.EncodeExpiryValue(make([]byte, 0, base.ExpiryLen+len(value)), expireAt.UnixMilli(), value)
	b.repr = batchrepr.Append(b.repr, base.KindSetExpiry, key, v)
}

// separates reports whether a value of n bytes goes to a blob file.
func (b *Batch) separates(n int) bool { return b.threshold > 0 && n >= b.threshold }

// setBlob adds a separated write: a placeholder record of kind holding
// prefix (the expiry, or nothing), and the value beside it, or a copy of
// it unless keep.
func (b *Batch) setBlob(kind base.Kind, key, prefix, value []byte, keep bool) {
	if !b.admit(kind, len(key), len(value)) {
		return
	}
	if !keep {
		value = append(make([]byte, 0, len(value)), value...)
	}
	b.repr = batchrepr.Append(b.repr, kind, key, prefix)
	b.blobs = append(b.blobs, value)
	b.blobBytes += len(value)
}

// withPointers returns the batch's encoding with each separated value
// replaced by the pointer add returns for it, after add has stored the
// value (with its key, which the blob record keeps for checking and GC).
// The batch itself is unchanged, so it can be applied again.
func (b *Batch) withPointers(add func(key, value []byte) (blob.Pointer, error)) ([]byte, error) {
	out := make([]byte, batchrepr.HeaderLen, len(b.repr)+len(b.blobs)*blob.MaxPointerLen)
	r, err := batchrepr.NewReader(b.repr)
	if err != nil {
		return nil, err
	}
	var v []byte
	for i := 0; ; {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if kind.IsBlob() {
			p, err := add(key, b.blobs[i])
			if err != nil {
				return nil, err
			}
			i++
			v = p.Append(append(v[:0], value...))
			value = v
		}
		out = batchrepr.Append(out, kind, key, value)
	}
}

// MaxValueLen is the longest value a write with a key of keyLen bytes may
// carry in this DB: MaxValueSize when values are separated
// (Options.ValueThreshold) and the key leaves room for a pointer, else
// what MaxEntrySize leaves beside the key. A server built on the engine
// derives its own limits from it, so that nothing it accepts is refused
// here.
func (db *DB) MaxValueLen(keyLen int) int64 {
	inline := int64(MaxEntrySize - keyLen)
	if t := db.opts.ValueThreshold; t > 0 && t <= MaxValueSize && keyLen+blob.MaxPointerLen <= MaxEntrySize {
		return max(inline, MaxValueSize)
	}
	return max(inline, 0)
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
	if kind.IsBlob() {
		if valueLen > MaxValueSize {
			b.err = fmt.Errorf("%w: value of %d bytes exceeds the limit of %d bytes for a value (MaxValueSize)",
				ErrValueTooLarge, valueLen, MaxValueSize)
			return false
		}
		// What the tree stores is the pointer.
		valueLen = blob.MaxPointerLen
	}
	if keyLen+valueLen > MaxEntrySize {
		b.err = fmt.Errorf("%w: key of %d bytes and value of %d bytes exceed the limit of %d bytes for a key and value together (MaxEntrySize)",
			ErrValueTooLarge, keyLen, valueLen, MaxEntrySize)
		return false
	}
	stored := valueLen
	if kind.HasExpiry() {
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

// Append adds o's writes to b after b's own, as if each had been added to
// b directly (a write b's limits refuse sets b's Err, and o's error, if
// any, becomes b's). o is unchanged; b shares o's separated values, which
// no batch modifies. A server running several commands as one
// transaction gives each command a batch of its own, so that a command
// that fails discards only its own writes, and appends each command's
// writes to the transaction's batch.
func (b *Batch) Append(o *Batch) {
	if b.err != nil {
		return
	}
	if o.err != nil {
		b.err = o.err
		return
	}
	r, err := batchrepr.NewReader(o.repr)
	if err != nil {
		b.err = err
		return
	}
	blobs := o.blobs
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			b.err = err
			return
		}
		if !ok {
			return
		}
		valueLen := len(value)
		if kind.IsBlob() {
			valueLen = len(blobs[0])
		} else if kind.HasExpiry() {
			valueLen -= base.ExpiryLen
		}
		if !b.admit(kind, len(key), valueLen) {
			return
		}
		b.repr = batchrepr.Append(b.repr, kind, key, value)
		if kind.IsBlob() {
			b.blobs = append(b.blobs, blobs[0])
			b.blobBytes += len(blobs[0])
			blobs = blobs[1:]
		}
	}
}

// ForEachKey calls fn with the key of each write in the batch, in order;
// the slice is valid only during the call. A server uses it to learn
// which of its keys a batch changes (Redis' WATCH).
func (b *Batch) ForEachKey(fn func(key []byte)) {
	forEachKey(b.repr, fn)
}

// ForEachExpiry calls fn with the key of each write in the batch, in
// order, and the expiry the write gives it: the zero time for a value
// without one and for a delete. The key slice is valid only during the
// call. A server uses it to learn when its keys expire from the batches
// it commits: reading them back may find a short expiry already passed.
func (b *Batch) ForEachExpiry(fn func(key []byte, expireAt time.Time)) {
	r, err := batchrepr.NewReader(b.repr)
	if err != nil {
		return
	}
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			return
		}
		var at time.Time
		if kind.HasExpiry() {
			if ms, _, ok := base.DecodeExpiryValue(value); ok {
				at = time.UnixMilli(ms)
			}
		}
		fn(key, at)
	}
}

// ForEachReplicatedKey calls fn with the key of each write of a
// replicated batch (the encoding ApplyReplicated takes), in order; the
// slice is valid only during the call. A replica uses it to learn which
// keys a batch it applied changed. Malformed data ends the walk early.
func ForEachReplicatedKey(data []byte, fn func(key []byte)) {
	forEachKey(data, fn)
}

func forEachKey(repr []byte, fn func(key []byte)) {
	r, err := batchrepr.NewReader(repr)
	if err != nil {
		return
	}
	for {
		_, key, _, ok, err := r.Next()
		if err != nil || !ok {
			return
		}
		fn(key)
	}
}

// Err returns why a write was refused (see Batch), or nil.
func (b *Batch) Err() error { return b.err }

// Count is the number of writes in the batch.
func (b *Batch) Count() int { return int(batchrepr.Count(b.repr)) }

// Len is the size of the batch in bytes: its encoding and the values it
// holds for blob files.
func (b *Batch) Len() int { return len(b.repr) + b.blobBytes }

// Reset empties the batch for reuse, forgetting a refused write.
func (b *Batch) Reset() {
	b.repr = b.repr[:batchrepr.HeaderLen]
	clear(b.repr)
	b.resets++
	b.err = nil
	clear(b.blobs)
	b.blobs = b.blobs[:0]
	b.blobBytes = 0
	b.seq = 0
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
			"so Open stops before changing anything: keep the directory, and open it with Options.ValueThreshold set, so that recovery stores large values in blob files",
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
