package sstable

import (
	"encoding/binary"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// blockWriter builds one block: prefix-compressed entries, then the
// restart array and its count. Every restartInterval-th entry is a restart
// point, stored with no shared prefix, so a reader can start decoding there.
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	lastKey         []byte
	count           int
}

func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.count%w.restartInterval == 0 {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
	} else {
		shared = commonPrefix(w.lastKey, key)
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], key...)
	w.count++
}

func (w *blockWriter) empty() bool { return w.count == 0 }

// estimatedSize is the size finish would return now.
func (w *blockWriter) estimatedSize() int { return len(w.buf) + 4*len(w.restarts) + 4 }

// finish appends the restart array and returns the block. The result
// aliases the writer's buffer: it is valid until reset.
func (w *blockWriter) finish() []byte {
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.lastKey = w.lastKey[:0]
	w.count = 0
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// validateBlock checks a decoded block's restart array: the count fits, the
// first restart is at offset 0, and offsets strictly increase and stay
// inside the entry area. Blocks are validated once, when read from disk;
// iterators over cached blocks then rely on it.
func validateBlock(b []byte) string {
	if len(b) < 4 {
		return "block too short for restart count"
	}
	n := uint64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if n > uint64(len(b)-4)/4 {
		return "restart count exceeds block"
	}
	end := len(b) - 4 - int(n)*4
	if n == 0 {
		if end != 0 {
			return "entries without restart points"
		}
		return ""
	}
	prev := -1
	for i := 0; i < int(n); i++ {
		r := int(binary.LittleEndian.Uint32(b[end+4*i:]))
		if (i == 0 && r != 0) || r <= prev || r >= end {
			return "bad restart array"
		}
		prev = r
	}
	return ""
}

// blockIter walks one validated block. Keys are rebuilt into a buffer the
// iterator owns and reuses, so stepping allocates nothing once the buffer
// has grown to the longest key; values alias the block.
//
// Seeks compare keys as encoded internal keys, so they are only used on
// data and index blocks; meta blocks are only walked forward.
type blockIter struct {
	data        []byte
	entriesEnd  int // start of the restart array
	numRestarts int
	offset      int // current entry; == entriesEnd when exhausted forward
	next        int // entry after the current one
	key         []byte
	alt         []byte // scratch for SeekLT's look-ahead
	val         []byte
	valid       bool
	err         error
	file        string
	blockOffset uint64
}

// init points the iterator at block b, which validateBlock accepted.
func (i *blockIter) init(b []byte, file string, blockOffset uint64) {
	n := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	*i = blockIter{
		data:        b,
		entriesEnd:  len(b) - 4 - 4*n,
		numRestarts: n,
		key:         i.key[:0],
		alt:         i.alt[:0],
		file:        file,
		blockOffset: blockOffset,
	}
}

// reset empties the iterator, dropping its reference to the block but
// keeping its key buffers for reuse.
func (i *blockIter) reset() {
	*i = blockIter{key: i.key[:0], alt: i.alt[:0]}
}

func (i *blockIter) corrupt(reason string) bool {
	i.err = base.Corruptf(i.file, int64(i.blockOffset), "%s", reason)
	i.valid = false
	return false
}

func (i *blockIter) restart(k int) int {
	return int(binary.LittleEndian.Uint32(i.data[i.entriesEnd+4*k:]))
}

// entryAt parses the entry at off: the length of the prefix it shares
// with its predecessor's key, the rest of its key, its value and the
// offset of the next entry. ok is false when the entry is malformed.
func (i *blockIter) entryAt(off int) (shared int, suffix, val []byte, next int, ok bool) {
	var sh, unshared, vlen uint64
	p := off
	if e := i.data[p:i.entriesEnd]; len(e) >= 3 && e[0]|e[1]|e[2] < 0x80 {
		// Most entries have three one-byte varints; decoding them at once
		// is a measurable share of a seek.
		sh, unshared, vlen = uint64(e[0]), uint64(e[1]), uint64(e[2])
		p += 3
	} else {
		var n int
		if sh, n = binary.Uvarint(i.data[p:i.entriesEnd]); n <= 0 {
			return 0, nil, nil, 0, false
		}
		p += n
		if unshared, n = binary.Uvarint(i.data[p:i.entriesEnd]); n <= 0 {
			return 0, nil, nil, 0, false
		}
		p += n
		if vlen, n = binary.Uvarint(i.data[p:i.entriesEnd]); n <= 0 {
			return 0, nil, nil, 0, false
		}
		p += n
	}
	rest := uint64(i.entriesEnd - p)
	if sh > maxBlockLen || unshared > rest || vlen > rest-unshared {
		return 0, nil, nil, 0, false
	}
	k, v := p+int(unshared), p+int(unshared)+int(vlen)
	return int(sh), i.data[p:k], i.data[k:v:v], v, true
}

// loadAt decodes the entry at off, whose predecessor's key is in i.key.
func (i *blockIter) loadAt(off int) bool {
	shared, suffix, val, next, ok := i.entryAt(off)
	if !ok || shared > len(i.key) {
		return i.corrupt("bad block entry")
	}
	i.key = append(i.key[:shared], suffix...)
	i.val, i.offset, i.next, i.valid = val, off, next, true
	return true
}

// loadRestart decodes the entry at restart point k.
func (i *blockIter) loadRestart(k int) bool {
	i.key = i.key[:0]
	return i.loadAt(i.restart(k))
}

// restartKey returns the key stored at restart point k without copying:
// restart entries share nothing with their predecessor.
func (i *blockIter) restartKey(k int) ([]byte, bool) {
	shared, key, _, _, ok := i.entryAt(i.restart(k))
	if !ok || shared != 0 || len(key) < 8 {
		return nil, false
	}
	return key, true
}

func (i *blockIter) first() bool {
	if i.err != nil {
		return false
	}
	if i.numRestarts == 0 {
		i.valid = false
		return false
	}
	return i.loadRestart(0)
}

func (i *blockIter) last() bool {
	if i.err != nil {
		return false
	}
	if i.numRestarts == 0 {
		i.valid = false
		return false
	}
	return i.scanTo(i.numRestarts-1, i.entriesEnd)
}

// scanTo decodes forward from restart point k and stops on the entry that
// ends at limit, the offset of the entry after the one wanted.
func (i *blockIter) scanTo(k, limit int) bool {
	if !i.loadRestart(k) {
		return false
	}
	for i.next < limit {
		if !i.loadAt(i.next) {
			return false
		}
	}
	if i.next != limit {
		return i.corrupt("block entry overruns the next restart point")
	}
	return true
}

func (i *blockIter) nextEntry() bool {
	if i.err != nil || !i.valid {
		return false
	}
	if i.next >= i.entriesEnd {
		i.offset = i.entriesEnd
		i.valid = false
		return false
	}
	return i.loadAt(i.next)
}

func (i *blockIter) prevEntry() bool {
	if i.err != nil || !i.valid {
		return false
	}
	if i.offset == 0 {
		i.valid = false
		return false
	}
	// The entry before offset starts after the last restart point below
	// offset; find that restart point by binary search.
	lo, hi := 0, i.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if i.restart(m) < i.offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return i.scanTo(lo-1, i.offset)
}

// searchRestarts returns the index of the first restart point whose key is
// >= target (numRestarts if none), ok=false on a malformed restart entry.
func (i *blockIter) searchRestarts(target []byte) (int, bool) {
	lo, hi := 0, i.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, ok := i.restartKey(m)
		if !ok {
			return 0, i.corrupt("bad restart entry")
		}
		if base.CompareEncoded(k, target) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, true
}

// seekGE moves to the first entry whose key is >= target, an encoded
// internal key.
func (i *blockIter) seekGE(target []byte) bool {
	if i.err != nil {
		return false
	}
	k, ok := i.searchRestarts(target)
	if !ok {
		return false
	}
	if i.numRestarts == 0 {
		i.valid = false
		return false
	}
	// Every key before restart k is < target, and so are all but possibly
	// the last few keys from restart k-1 on.
	if !i.loadRestart(max(k-1, 0)) {
		return false
	}
	for {
		if len(i.key) < 8 {
			return i.corrupt("block key shorter than a trailer")
		}
		if base.CompareEncoded(i.key, target) >= 0 {
			return true
		}
		if !i.nextEntry() {
			return false
		}
	}
}

// seekLT moves to the last entry whose key is < target.
func (i *blockIter) seekLT(target []byte) bool {
	if i.err != nil {
		return false
	}
	k, ok := i.searchRestarts(target)
	if !ok {
		return false
	}
	if k == 0 {
		i.offset = 0
		i.valid = false
		return false
	}
	limit := i.entriesEnd
	if k < i.numRestarts {
		limit = i.restart(k)
	}
	// Restart k-1's key is < target; walk on while the next entry also is,
	// decoding it into alt first so the current entry survives a miss.
	if !i.loadRestart(k - 1) {
		return false
	}
	for i.next < limit {
		shared, suffix, val, next, ok := i.entryAt(i.next)
		if !ok || shared > len(i.key) {
			return i.corrupt("bad block entry")
		}
		i.alt = append(append(i.alt[:0], i.key[:shared]...), suffix...)
		if len(i.alt) < 8 {
			return i.corrupt("block key shorter than a trailer")
		}
		if base.CompareEncoded(i.alt, target) >= 0 {
			break
		}
		i.alt, i.key = i.key, i.alt
		i.val, i.offset, i.next = val, i.next, next
	}
	return true
}
