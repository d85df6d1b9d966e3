package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/lsmgo-dev/lsmgo/internal/base"
)

// tableIndex is the index block decoded once, when the table is opened,
// into arrays a lookup can binary-search directly. Searching the stored
// block instead costs two dependent cache misses per probe (the restart
// offset, then the entry it points at) plus varint decoding; at a few
// thousand blocks per table that was a fifth of a cached point read.
//
// Every separator's user key starts with prefix, the longest prefix all of
// them share. heads[i] holds the 8 bytes of separator i's user key that
// follow prefix, big-endian and zero-padded, so comparing heads orders
// separators by user key whenever they differ there: only equal heads need
// the whole key compared. Zero padding keeps the order (a shorter key that
// is a prefix of a longer one gets the smaller or an equal head).
type tableIndex struct {
	prefix  []byte
	heads   []uint64
	keyEnds []uint32 // separator i is keys[keyEnds[i-1]:keyEnds[i]] (from 0 for i = 0)
	keys    []byte
	handles []blockHandle
}

// decodeIndex builds the tableIndex of index, a validated index block read
// from file at offset off.
func decodeIndex(index []byte, file string, off uint64) (tableIndex, error) {
	var x tableIndex
	var it blockIter
	it.init(index, file, off)
	for ok := it.first(); ok; ok = it.nextEntry() {
		h, ok := decodeBlockHandle(it.val)
		if !ok {
			return tableIndex{}, base.Corruptf(file, int64(off), "bad data block handle in index")
		}
		if len(it.key) < 8 {
			return tableIndex{}, base.Corruptf(file, int64(off), "index key shorter than a trailer")
		}
		x.keys = append(x.keys, it.key...)
		x.keyEnds = append(x.keyEnds, uint32(len(x.keys)))
		x.handles = append(x.handles, h)
	}
	if it.err != nil {
		return tableIndex{}, it.err
	}
	n := len(x.handles)
	if n == 0 {
		return x, nil
	}
	// Keys are sorted, so the prefix of the first and last user keys is
	// shared by every key in between.
	first, last := x.userKey(0), x.userKey(n-1)
	x.prefix = first[:commonPrefix(first, last)]
	x.heads = make([]uint64, n)
	for i := range x.heads {
		x.heads[i] = head(x.userKey(i)[len(x.prefix):])
	}
	return x, nil
}

// head returns the first 8 bytes of b as a big-endian number, zero-padded.
func head(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
}

func (x *tableIndex) len() int { return len(x.handles) }

// key returns separator i, an encoded internal key.
func (x *tableIndex) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = x.keyEnds[i-1]
	}
	return x.keys[start:x.keyEnds[i]]
}

func (x *tableIndex) userKey(i int) []byte {
	k := x.key(i)
	return k[:len(k)-8]
}

// seekGE returns the index of the first separator >= target, an encoded
// internal key, or len() if there is none: the data block that holds the
// first entry >= target if any block does.
func (x *tableIndex) seekGE(target []byte) int {
	n := x.len()
	if n == 0 {
		return 0
	}
	tu := target[:len(target)-8]
	p := len(x.prefix)
	if c := bytes.Compare(tu[:min(len(tu), p)], x.prefix); c != 0 {
		// target's user key differs from the shared prefix (or is a
		// proper prefix of it), which orders it against every separator.
		if c < 0 {
			return 0
		}
		return n
	}
	h := head(tu[p:])
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		var less bool
		if hm := x.heads[m]; hm != h {
			less = hm < h
		} else {
			less = base.CompareEncoded(x.key(m), target) < 0
		}
		if less {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
