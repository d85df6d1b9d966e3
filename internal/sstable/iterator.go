package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// iterPos is where a tableIter stands when it is not on an entry, which
// decides what Next and Prev do from there.
type iterPos uint8

const (
	// posUnset: never positioned; Next acts as First and Prev as Last.
	posUnset iterPos = iota
	posValid
	// posBeforeStart: moved backward past the first entry in bounds; Next
	// goes to the first entry.
	posBeforeStart
	// posAfterEnd: moved forward past the last entry in bounds; Prev goes
	// to the last entry.
	posAfterEnd
	// posError: an error occurred; the iterator stays invalid.
	posError
)

// seekTrailer is the largest trailer: (key, seekTrailer) sorts before every
// entry for key, so seeking to it finds the first entry with that user key.
const seekTrailer = ^uint64(0)

// tableIter is a two-level iterator: a position in the decoded index picks
// a data block, the data block iterator walks it. Bounds are enforced on
// user keys after every move.
type tableIter struct {
	r            *Reader
	lower, upper []byte
	block        int // index of the data block data walks
	data         blockIter
	ikey         base.InternalKey
	pos          iterPos
	err          error
	seekBuf      []byte
	// ra, when not nil, makes the iterator read blocks ahead, past the
	// cache (NewCompactionIter).
	ra *readahead
	// Initial storage of the key buffers, so that an iterator over keys
	// of common sizes costs one allocation, not four: a seek opens one
	// per table it touches.
	bufs [3][inlineKeyLen]byte
}

// inlineKeyLen is the key length tableIter's buffers hold before they
// grow onto the heap.
const inlineKeyLen = 64

func (i *tableIter) init(r *Reader, lower, upper []byte) {
	i.r, i.lower, i.upper = r, lower, upper
	i.block = 0
	i.data.reset()
	i.ikey = base.InternalKey{}
	i.pos = posUnset
	i.err = nil
}

// release drops references to the reader and its blocks so that a pooled
// or closed iterator pins no memory but its buffers.
func (i *tableIter) release() {
	i.r, i.lower, i.upper, i.ra = nil, nil, nil, nil
	i.data.reset()
	i.ikey = base.InternalKey{}
}

func (i *tableIter) fail(err error) bool {
	i.err = err
	i.pos = posError
	i.ikey = base.InternalKey{}
	return false
}

// loadBlock points the data iterator at data block k.
func (i *tableIter) loadBlock(k int) bool {
	h := i.r.index.handles[k]
	var data []byte
	if i.ra != nil {
		var err error
		if data, err = i.r.readDataBlockAhead(i.ra, k); err != nil {
			return i.fail(err)
		}
	} else {
		b, err := i.r.readDataBlock(h)
		if err != nil {
			return i.fail(err)
		}
		// Keys and values the iterator returns alias the block for as
		// long as its user likes: its memory must never be recycled.
		b.Escape()
		b.Release()
		data = b.Data
	}
	i.block = k
	i.data.init(data, i.r.opts.FileName, h.offset)
	return true
}

// skipForward moves past exhausted data blocks to the next entry, if any.
func (i *tableIter) skipForward() bool {
	for !i.data.valid {
		if i.data.err != nil {
			return i.fail(i.data.err)
		}
		if i.block+1 >= i.r.index.len() {
			i.pos = posAfterEnd
			return false
		}
		if !i.loadBlock(i.block + 1) {
			return false
		}
		i.data.first()
	}
	return true
}

// skipBackward moves before exhausted data blocks to the previous entry.
func (i *tableIter) skipBackward() bool {
	for !i.data.valid {
		if i.data.err != nil {
			return i.fail(i.data.err)
		}
		if i.block == 0 {
			i.pos = posBeforeStart
			return false
		}
		if !i.loadBlock(i.block - 1) {
			return false
		}
		i.data.last()
	}
	return true
}

// decodeKey parses the data iterator's key into ikey.
func (i *tableIter) decodeKey() bool {
	k, ok := base.DecodeInternalKey(i.data.key)
	if !ok {
		return i.fail(base.Corruptf(i.r.opts.FileName, int64(i.data.blockOffset), "bad internal key %q", i.data.key))
	}
	i.ikey = k
	return true
}

func (i *tableIter) finishForward() bool {
	if !i.skipForward() || !i.decodeKey() {
		return false
	}
	if i.upper != nil && bytes.Compare(i.ikey.UserKey, i.upper) >= 0 {
		i.pos = posAfterEnd
		return false
	}
	i.pos = posValid
	return true
}

func (i *tableIter) finishBackward() bool {
	if !i.skipBackward() || !i.decodeKey() {
		return false
	}
	if i.lower != nil && bytes.Compare(i.ikey.UserKey, i.lower) < 0 {
		i.pos = posBeforeStart
		return false
	}
	i.pos = posValid
	return true
}

// seekGEInternal moves to the first entry >= target, an encoded internal
// key, ignoring the lower bound.
func (i *tableIter) seekGEInternal(target []byte) bool {
	if i.pos == posError {
		return false
	}
	k := i.r.index.seekGE(target)
	if k == i.r.index.len() {
		i.pos = posAfterEnd
		return false
	}
	if !i.loadBlock(k) {
		return false
	}
	i.data.seekGE(target)
	return i.finishForward()
}

func (i *tableIter) makeSeekKey(userKey []byte) []byte {
	i.seekBuf = binary.LittleEndian.AppendUint64(append(i.seekBuf[:0], userKey...), seekTrailer)
	return i.seekBuf
}

// SeekGE moves to the first entry whose user key is >= key (and >= the
// lower bound).
func (i *tableIter) SeekGE(key []byte) bool {
	if i.lower != nil && bytes.Compare(key, i.lower) < 0 {
		key = i.lower
	}
	if i.upper != nil && bytes.Compare(key, i.upper) >= 0 {
		if i.pos != posError {
			i.pos = posAfterEnd
		}
		return false
	}
	return i.seekGEInternal(i.makeSeekKey(key))
}

// SeekLT moves to the last entry whose user key is < key (and < the upper
// bound).
func (i *tableIter) SeekLT(key []byte) bool {
	if i.pos == posError {
		return false
	}
	if i.upper != nil && bytes.Compare(key, i.upper) > 0 {
		key = i.upper
	}
	if i.lower != nil && bytes.Compare(key, i.lower) <= 0 {
		i.pos = posBeforeStart
		return false
	}
	target := i.makeSeekKey(key)
	k := i.r.index.seekGE(target)
	if k == i.r.index.len() {
		// Every block ends before target (no upper bound can be below
		// it), so the answer is the last entry.
		return i.lastUnbounded()
	}
	if !i.loadBlock(k) {
		return false
	}
	i.data.seekLT(target)
	return i.finishBackward()
}

// First moves to the first entry in bounds.
func (i *tableIter) First() bool {
	if i.lower != nil {
		return i.SeekGE(i.lower)
	}
	if i.pos == posError {
		return false
	}
	if i.r.index.len() == 0 {
		i.pos = posAfterEnd
		return false
	}
	if !i.loadBlock(0) {
		return false
	}
	i.data.first()
	return i.finishForward()
}

// Last moves to the last entry in bounds.
func (i *tableIter) Last() bool {
	if i.upper != nil {
		return i.SeekLT(i.upper)
	}
	return i.lastUnbounded()
}

// lastUnbounded moves to the table's last entry, then applies the lower
// bound.
func (i *tableIter) lastUnbounded() bool {
	if i.pos == posError {
		return false
	}
	if i.r.index.len() == 0 {
		i.pos = posBeforeStart
		return false
	}
	if !i.loadBlock(i.r.index.len() - 1) {
		return false
	}
	i.data.last()
	return i.finishBackward()
}

// Next moves to the following entry. From before the start (or a fresh
// iterator) it moves to the first entry.
func (i *tableIter) Next() bool {
	switch i.pos {
	case posValid:
		i.data.nextEntry()
		return i.finishForward()
	case posBeforeStart, posUnset:
		return i.First()
	}
	return false
}

// Prev moves to the preceding entry. From after the end (or a fresh
// iterator) it moves to the last entry.
func (i *tableIter) Prev() bool {
	switch i.pos {
	case posValid:
		i.data.prevEntry()
		return i.finishBackward()
	case posAfterEnd, posUnset:
		return i.Last()
	}
	return false
}

// Valid reports whether the iterator is on an entry.
func (i *tableIter) Valid() bool { return i.pos == posValid }

// Key returns the current key; its UserKey aliases an iterator buffer
// valid until the next move.
func (i *tableIter) Key() base.InternalKey { return i.ikey }

// Value returns the current value. It aliases a block and must not be
// modified; it is valid until the next move.
func (i *tableIter) Value() []byte {
	if i.pos != posValid {
		return nil
	}
	return i.data.val
}

// Error returns the first error the iterator met.
func (i *tableIter) Error() error { return i.err }

// Close releases the iterator and returns its error, if any.
func (i *tableIter) Close() error {
	err := i.err
	i.release()
	i.pos = posError
	return err
}
