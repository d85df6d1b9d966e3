package lsmgo

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo/internal/base"
	"github.com/lsmgo-dev/lsmgo/internal/iter"
	"github.com/lsmgo-dev/lsmgo/internal/manifest"
)

// Iterator walks the live keys of a DB or snapshot in key order, forward
// or backward, within optional bounds. It sees the DB as of its creation.
// Key and Value are valid only until the next positioning call; copy what
// you keep. An Iterator is not safe for concurrent use; Close it to
// release the files it pins.
type Iterator struct {
	db      *DB
	rs      *readState
	it      base.InternalIterator
	readSeq base.SeqNum
	lower   []byte
	upper   []byte
	nowMs   int64

	valid bool
	dir   int // +1 after a forward move, -1 after a backward one
	key   []byte
	value []byte
	// keyBuf and valueBuf hold the current entry when the internal
	// iterator has already moved past it (reverse iteration).
	keyBuf   []byte
	valueBuf []byte
	// pointer is set when value is an encoded blob pointer that Value
	// has not resolved yet: an iterator that reads only keys never
	// touches a blob file. blobBuf holds resolved values, reused.
	pointer bool
	blobBuf []byte
	err     error
	closed  bool
	// skipped counts the dead keys passed over (Skipped).
	skipped int64
}

// NewIter returns an iterator over the DB's current state.
func (db *DB) NewIter(o *IterOptions) (*Iterator, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.newIter(o, readSeqLatest)
}

func (db *DB) newIter(o *IterOptions, readSeq base.SeqNum) (*Iterator, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	rs, readSeq, err := db.loadReadStateAt(readSeq)
	if err != nil {
		return nil, err
	}
	return db.newIterIn(o, rs, readSeq)
}

// newIterIn returns an iterator over the pinned read state rs at readSeq;
// it takes over the caller's reference to rs.
func (db *DB) newIterIn(o *IterOptions, rs *readState, readSeq base.SeqNum) (*Iterator, error) {
	return db.newIterOver(o, rs, readSeq, nil)
}

// newIterOver is newIterIn with top, when not nil, as a source newer than
// every other (an Overlay's batch): the others then show only the entries
// below readSeq, and the iterator reads top's entries too, up to its
// sequence numbers (see Overlay.NewIter).
func (db *DB) newIterOver(o *IterOptions, rs *readState, readSeq base.SeqNum, top *overlayTop) (*Iterator, error) {
	it := &Iterator{db: db, rs: rs, readSeq: readSeq, nowMs: db.opts.Now().UnixMilli()}
	if o != nil {
		it.lower = bytes.Clone(o.LowerBound)
		it.upper = bytes.Clone(o.UpperBound)
	}
	children := []base.InternalIterator{rs.mem.mt.NewIter()}
	for _, m := range rs.imm {
		children = append(children, m.mt.NewIter())
	}
	for _, f := range rs.version.Files[0] {
		if !overlapsBounds(f, it.lower, it.upper) {
			continue
		}
		t, err := db.tables.newIter(f, it.lower, it.upper)
		if err != nil {
			for _, c := range children {
				c.Close()
			}
			rs.unref()
			return nil, err
		}
		children = append(children, t)
	}
	for level := 1; level < manifest.NumLevels; level++ {
		if files := rs.version.Files[level]; len(files) > 0 {
			lower, upper := it.lower, it.upper
			children = append(children, newLevelIter(files, func(f *manifest.FileMetadata) (base.InternalIterator, error) {
				return db.tables.newIter(f, lower, upper)
			}))
		}
	}
	if top != nil {
		for i, c := range children {
			children[i] = &seqFilter{InternalIterator: c, below: readSeq}
		}
		children = append(children, top.mt.NewIter())
		it.readSeq = top.readSeq
	}
	it.it = iter.NewMergingIter(children...)
	db.m.openIters.Add(1)
	return it, nil
}

func overlapsBounds(f *manifest.FileMetadata, lower, upper []byte) bool {
	if lower != nil && bytes.Compare(f.Largest.UserKey, lower) < 0 {
		return false
	}
	if upper != nil && bytes.Compare(f.Smallest.UserKey, upper) >= 0 {
		return false
	}
	return true
}

// First moves to the first key.
func (i *Iterator) First() bool {
	if i.closed {
		return false
	}
	if i.lower != nil {
		return i.SeekGE(i.lower)
	}
	i.dir = +1
	i.it.First()
	return i.findNext()
}

// Last moves to the last key.
func (i *Iterator) Last() bool {
	if i.closed {
		return false
	}
	if i.upper != nil {
		return i.SeekLT(i.upper)
	}
	i.dir = -1
	i.it.Last()
	return i.findPrev()
}

// SeekGE moves to the first key >= key.
func (i *Iterator) SeekGE(key []byte) bool {
	if i.closed {
		return false
	}
	if i.lower != nil && bytes.Compare(key, i.lower) < 0 {
		key = i.lower
	}
	i.dir = +1
	i.it.SeekGE(key)
	return i.findNext()
}

// SeekLT moves to the last key < key.
func (i *Iterator) SeekLT(key []byte) bool {
	if i.closed {
		return false
	}
	if i.upper != nil && bytes.Compare(key, i.upper) > 0 {
		key = i.upper
	}
	i.dir = -1
	i.it.SeekLT(key)
	return i.findPrev()
}

// Next moves to the next key.
func (i *Iterator) Next() bool {
	if !i.valid {
		return false
	}
	if i.dir < 0 {
		// The internal iterator sits before the current key: step back
		// onto it, then past all its versions.
		i.dir = +1
		i.it.SeekGE(i.key)
	}
	i.skipUserKey(i.key)
	return i.findNext()
}

// Prev moves to the previous key.
func (i *Iterator) Prev() bool {
	if !i.valid {
		return false
	}
	i.dir = -1
	// Forward iteration leaves the internal iterator on the current key;
	// reverse leaves it before it. Seeking covers both.
	i.it.SeekLT(i.key)
	return i.findPrev()
}

// skipUserKey advances the internal iterator past every version of key.
// key must not alias the internal iterator's memory.
func (i *Iterator) skipUserKey(key []byte) {
	for i.it.Valid() && bytes.Equal(i.it.Key().UserKey, key) {
		i.it.Next()
	}
}

// findNext moves forward from the internal position to the first user key
// whose newest visible version is a live value.
func (i *Iterator) findNext() bool {
	i.valid = false
	for i.it.Valid() {
		k := i.it.Key()
		if i.upper != nil && bytes.Compare(k.UserKey, i.upper) >= 0 {
			break
		}
		if !base.Visible(k.Seq(), i.readSeq) {
			i.it.Next()
			continue
		}
		// k is the newest visible version of its user key.
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		if v, ok := i.live(k.Kind(), i.it.Value()); ok {
			i.key, i.value, i.valid = i.keyBuf, v, true
			return true
		}
		if i.err != nil {
			return false
		}
		i.skipped++
		i.skipUserKey(i.keyBuf)
	}
	i.noteError()
	return false
}

// findPrev moves backward from the internal position to the last user key
// whose newest visible version is a live value. Going backward, a user
// key's versions arrive oldest first, so the newest visible one is the
// last seen before the key changes.
func (i *Iterator) findPrev() bool {
	i.valid = false
	for i.it.Valid() {
		k := i.it.Key()
		if i.lower != nil && bytes.Compare(k.UserKey, i.lower) < 0 {
			break
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		found, kind := false, base.KindDelete
		for i.it.Valid() {
			k = i.it.Key()
			if !bytes.Equal(k.UserKey, i.keyBuf) {
				break
			}
			if base.Visible(k.Seq(), i.readSeq) {
				found, kind = true, k.Kind()
				i.valueBuf = append(i.valueBuf[:0], i.it.Value()...)
			}
			i.it.Prev()
		}
		if i.it.Error() != nil {
			// The versions still to come may include a newer one than
			// those seen, so what was found cannot be trusted.
			break
		}
		if !found {
			continue
		}
		if v, ok := i.live(kind, i.valueBuf); ok {
			i.key, i.value, i.valid = i.keyBuf, v, true
			return true
		}
		if i.err != nil {
			return false
		}
		i.skipped++
	}
	i.noteError()
	return false
}

// live resolves an entry to the user value a reader sees, or to the
// encoded pointer to it (setting i.pointer); ok is false for tombstones
// and expired entries.
func (i *Iterator) live(kind base.Kind, value []byte) ([]byte, bool) {
	if kind == base.KindDelete {
		return nil, false
	}
	i.pointer = kind.IsBlob()
	if kind.HasExpiry() {
		ms, v, ok := base.DecodeExpiryValue(value)
		if !ok {
			i.err = base.Corruptf("", -1, "expiring value of %d bytes is shorter than its expiry", len(value))
			return nil, false
		}
		return v, ms > i.nowMs
	}
	return value, true
}

func (i *Iterator) noteError() {
	if i.err == nil {
		i.err = i.it.Error()
		i.db.noteCorruption(i.err)
	}
}

// Valid reports whether the iterator is on a key.
func (i *Iterator) Valid() bool { return i.valid }

// Key returns the current key. The slice is valid until the iterator
// moves or closes; copy it to keep it.
func (i *Iterator) Key() []byte { return i.key }

// Value returns the current value, valid until the iterator moves or
// closes. A value stored in a blob file is read here, not when the
// iterator moves; if that read fails, Value returns nil, the iterator
// becomes invalid and Error says why.
func (i *Iterator) Value() []byte {
	if i.valid && i.pointer {
		v, err := i.db.blobs.read(i.blobBuf[:0], i.value)
		if err != nil {
			i.err, i.valid, i.value = err, false, nil
			return nil
		}
		i.blobBuf, i.value, i.pointer = v, v, false
	}
	return i.value
}

// Skipped returns how many dead keys (deleted or expired, their
// deletion not yet dropped by compaction) the iterator has passed over so
// far, in every direction. Until compaction drops them, deletions cost a
// walk as much as live keys do: a caller that deletes at random in a range
// it walks can tell from this when the walk has become mostly dead, and
// move the live keys somewhere fresh.
func (i *Iterator) Skipped() int64 { return i.skipped }

// Error returns the first I/O or corruption error the iterator met; an
// iterator that hits one becomes invalid.
func (i *Iterator) Error() error { return i.err }

// Close releases the iterator's resources and returns its error, if any.
func (i *Iterator) Close() error {
	if i.closed {
		return ErrClosed
	}
	// A closed iterator is invalid, and positioning it does nothing: the
	// memtables it read may be gone.
	i.closed = true
	i.valid, i.key, i.value = false, nil, nil
	err := i.it.Close()
	i.rs.unref()
	i.db.m.openIters.Add(-1)
	if i.err != nil {
		return i.err
	}
	return err
}
