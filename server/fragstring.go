package server

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/lsmgo-dev/lsmgo"
)

// A string that bit commands grow past fragThreshold bytes is stored in
// fragments, so that a bitmap whose bits reach offset 2^32-1 costs what
// its set bits cost, and SETBIT and GETBIT touch one fragment whatever
// the string's length (doc/server.md, "Bitmaps and HyperLogLogs"):
//
//	'k' + user key                       header 'B' + version (8, BE) + length in bytes (8, BE)
//	'e' + … + version + index (4, BE)    one run: uvarint skip + bytes [index*fragSize+skip, …)
//	                                     of the string up to the fragment's last nonzero byte
//	                                     or runs: uvarint fragRuns, then per run uvarint gap
//	                                     (zeros since the last run) + uvarint n + n bytes
//
// A fragment is written in whichever form is shorter: a sparse bitmap's
// fragment, a few bits scattered over its 4 KiB, costs a few bytes a bit
// (and a SETBIT writes that much) rather than the span between its
// outermost bits.
//
// It is a collection (collection.go) whose count is the string's length:
// DEL, EXPIRE and FLUSHALL write the metadata only, COPY and RENAME copy
// the fragments under a new version, and the compaction filter reclaims
// the fragments of a deleted one. A fragment that is all zeros is not
// stored, and a string's bytes past its length are zero in its last
// fragment. To every command it is a string: TYPE says "string", and the
// commands without a fragment-wise path read it whole (conn.get).
const (
	fragSize      = 4096
	fragThreshold = 64 << 10
	fragIndexLen  = 4
	// fragRuns opens a fragment stored as runs: no skip is that large.
	fragRuns = fragSize + 1
	// fragRunBreak is the number of zeros that ends a run: a gap of
	// fewer costs no more stored as zeros than as a new run's header.
	fragRunBreak = 3
)

func fragIndexKey(dst, userKey []byte, m collMeta, index int64) []byte {
	dst = elemsKey(dst, userKey, m)
	return binary.BigEndian.AppendUint32(dst, uint32(index))
}

func fragCorrupt(userKey []byte, reason string) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", userKey), Offset: -1, Reason: "fragmented string " + reason}
}

// fragWalk calls fn with each stored fragment of m at userKey whose index
// is in [from, to), in order, read through r: the string's bytes from
// offset at on are data (the rest of the fragment is zeros); data is
// valid during the call only.
func (ks *keyspace) fragWalk(r lsmgo.Reader, userKey []byte, m collMeta, from, to int64, fn func(at int64, data []byte) error) error {
	start := binary.BigEndian.AppendUint32(nil, uint32(from))
	var ferr error
	var buf []byte
	err := ks.scanElems(r, userKey, m, start, func(elem, val []byte) bool {
		if len(elem) != fragIndexLen {
			ferr = fragCorrupt(userKey, fmt.Sprintf("fragment key %x", elem))
			return false
		}
		i := int64(binary.BigEndian.Uint32(elem))
		if i >= to {
			return false
		}
		var at int64
		var data []byte
		if at, data, ferr = decodeFrag(userKey, m, i, val, &buf); ferr == nil {
			ferr = fn(at, data)
		}
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// fragRead returns bytes [off, off+n) of m at userKey, which lie within
// its length.
func (ks *keyspace) fragRead(r lsmgo.Reader, userKey []byte, m collMeta, off, n int64) ([]byte, error) {
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	first, last := off/fragSize, (off+n-1)/fragSize
	place := func(base int64, data []byte) error {
		lo, hi := max(off, base), min(off+n, base+int64(len(data)))
		if lo < hi {
			copy(out[lo-off:hi-off], data[lo-base:hi-base])
		}
		return nil
	}
	if first == last {
		// One fragment, the commonest case (GETBIT): a point read.
		var buf []byte
		val, ok, err := ks.getElem(r, &buf, userKey, m, binary.BigEndian.AppendUint32(nil, uint32(first)))
		if err != nil || !ok {
			return out, err
		}
		at, data, err := decodeFrag(userKey, m, first, val, &buf)
		if err != nil {
			return nil, err
		}
		return out, place(at, data)
	}
	return out, ks.fragWalk(r, userKey, m, first, last+1, place)
}

// fragCount returns the number of set bits of m at userKey.
func (ks *keyspace) fragCount(r lsmgo.Reader, userKey []byte, m collMeta) (int64, error) {
	var n int64
	err := ks.fragWalk(r, userKey, m, 0, 1<<32, func(_ int64, data []byte) error {
		for len(data) >= 8 {
			n += int64(bits.OnesCount64(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		for _, b := range data {
			n += int64(bits.OnesCount8(b))
		}
		return nil
	})
	return n, err
}

// fragEdit stages writes to a fragmented string: the fragments it
// touches are read once (or start as zeros in a new one), edited in
// memory, and written with the metadata by flush.
type fragEdit struct {
	ks      *keyspace
	r       lsmgo.Reader
	userKey []byte
	m       collMeta
	stored  collMeta // m as stored, before the edit
	fresh   bool     // a new version: no fragment is stored yet
	dirty   map[int64][]byte
	order   []int64
}

// newFragEdit starts an edit of the fragmented string m at userKey.
func (ks *keyspace) newFragEdit(r lsmgo.Reader, userKey []byte, m collMeta) *fragEdit {
	return &fragEdit{ks: ks, r: r, userKey: userKey, m: m, stored: m, dirty: map[int64][]byte{}}
}

// newFragString starts a new, empty fragmented string at userKey, with a
// version of its own, that will expire at expireAt's time (v.expireAt).
func (ks *keyspace) newFragString(r lsmgo.Reader, ns nsID, userKey []byte, v stringValue) (*fragEdit, error) {
	m, err := ks.newColl(ns, typeFragString)
	if err != nil {
		return nil, err
	}
	m.expireAt = v.expireAt
	e := ks.newFragEdit(r, userKey, m)
	e.fresh = true
	return e, nil
}

// frag returns fragment i for editing, fragSize bytes.
func (e *fragEdit) frag(i int64) ([]byte, error) {
	if f, ok := e.dirty[i]; ok {
		return f, nil
	}
	f := make([]byte, fragSize)
	if !e.fresh {
		var buf []byte
		val, ok, err := e.ks.getElem(e.r, &buf, e.userKey, e.m, binary.BigEndian.AppendUint32(nil, uint32(i)))
		if err != nil {
			return nil, err
		}
		if ok {
			at, data, err := decodeFrag(e.userKey, e.m, i, val, &buf)
			if err != nil {
				return nil, err
			}
			copy(f[at-i*fragSize:], data)
		}
	}
	e.dirty[i] = f
	e.order = append(e.order, i)
	return f, nil
}

// length is the string's length, with the staged writes.
func (e *fragEdit) length() int64 { return e.m.count }

// read returns bytes [off, off+n) of the string with the staged writes,
// zeros past its length.
func (e *fragEdit) read(off, n int64) ([]byte, error) {
	out := make([]byte, n)
	for at := off; at < off+n; {
		i := at / fragSize
		end := min(off+n, (i+1)*fragSize)
		switch f, staged := e.dirty[i]; {
		case staged:
			copy(out[at-off:end-off], f[at-i*fragSize:])
		case !e.fresh && at < e.m.count:
			part, err := e.ks.fragRead(e.r, e.userKey, e.m, at, min(end, e.m.count)-at)
			if err != nil {
				return nil, err
			}
			copy(out[at-off:], part)
		}
		at = end
	}
	return out, nil
}

// write stages data at off, growing the string as needed. All-zero
// pieces of a new string are skipped: they are what an absent fragment
// reads as.
func (e *fragEdit) write(off int64, data []byte) error {
	e.m.count = max(e.m.count, off+int64(len(data)))
	for len(data) > 0 {
		i, at := off/fragSize, off%fragSize
		n := min(int64(len(data)), fragSize-at)
		piece := data[:n]
		if _, staged := e.dirty[i]; staged || !e.fresh || !allZero(piece) {
			f, err := e.frag(i)
			if err != nil {
				return err
			}
			copy(f[at:], piece)
		}
		data, off = data[n:], off+n
	}
	return nil
}

func allZero(b []byte) bool { return nonZero(b, 0) == len(b) }

// flush adds the staged fragments to b, and the metadata where it
// changed: an edit inside the string's length (most SETBITs) writes its
// fragment alone, which WATCH and tracking see as a write to the string
// (userKeyOf). An edit that stages nothing (APPEND of "") still writes
// the metadata, a change to Redis.
func (e *fragEdit) flush(b *lsmgo.Batch, kb *keyBuf) {
	var buf, val []byte
	for _, i := range e.order {
		buf = fragIndexKey(buf, e.userKey, e.m, i)
		switch val = encodeFrag(val[:0], e.dirty[i]); {
		case len(val) > 0:
			b.Set(buf, val)
		case !e.fresh:
			b.Delete(buf)
		}
	}
	if e.fresh || len(e.order) == 0 || e.m.count != e.stored.count || !e.m.expireAt.Equal(e.stored.expireAt) {
		e.ks.putColl(b, kb, e.userKey, e.m)
	}
}

// encodeFrag appends to dst the stored form of fragment f, the shorter
// of one run and runs, or nothing when f is all zeros.
func encodeFrag(dst, f []byte) []byte {
	skip := nonZero(f, 0)
	if skip == len(f) {
		return dst
	}
	f = f[:lastNonZero(f)+1]
	start := len(dst)
	dst = binary.AppendUvarint(dst, fragRuns)
	for pos, at := 0, skip; at < len(f); at = nonZero(f, pos) {
		end := at + 1
		for zeros := 0; end+zeros < len(f) && zeros < fragRunBreak; {
			if f[end+zeros] == 0 {
				zeros++
			} else {
				end, zeros = end+zeros+1, 0
			}
		}
		dst = binary.AppendUvarint(dst, uint64(at-pos))
		dst = binary.AppendUvarint(dst, uint64(end-at))
		dst = append(dst, f[at:end]...)
		pos = end
		if len(dst)-start >= uvarintLen(skip)+len(f)-skip {
			// Runs would be no shorter than one run.
			dst = binary.AppendUvarint(dst[:start], uint64(skip))
			return append(dst, f[skip:]...)
		}
	}
	return dst
}

// nonZero returns the index of the first nonzero byte of b at or after
// from, or len(b): a word at a time, as a sparse fragment is mostly
// zeros.
func nonZero(b []byte, from int) int {
	i := from
	for ; i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == 0; i += 8 {
	}
	for ; i < len(b) && b[i] == 0; i++ {
	}
	return i
}

// lastNonZero returns the index of the last nonzero byte of b, or -1.
func lastNonZero(b []byte) int {
	i := len(b)
	for ; i >= 8 && binary.LittleEndian.Uint64(b[i-8:]) == 0; i -= 8 {
	}
	for i--; i >= 0 && b[i] == 0; i-- {
	}
	return i
}

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

// decodeFrag decodes the stored fragment i of m at userKey: the string's
// bytes from offset at on are data, the rest of the fragment zeros. A
// fragment stored as runs is spelled out in *buf, which data then shares.
func decodeFrag(userKey []byte, m collMeta, i int64, val []byte, buf *[]byte) (at int64, data []byte, err error) {
	malformed := func() (int64, []byte, error) {
		return 0, nil, fragCorrupt(userKey, fmt.Sprintf("fragment %d of %d bytes is malformed", i, len(val)))
	}
	skip, w := binary.Uvarint(val)
	switch {
	case w <= 0:
		return malformed()
	case skip == fragRuns:
		var first uint64
		data = (*buf)[:0]
		for rest, pos := val[w:], uint64(0); len(rest) > 0 || len(data) == 0; {
			gap, w1 := binary.Uvarint(rest)
			n, w2 := 0, 0
			if w1 > 0 {
				var n64 uint64
				n64, w2 = binary.Uvarint(rest[w1:])
				n = int(min(n64, fragSize+1))
			}
			if w1 <= 0 || w2 <= 0 || n == 0 || gap > fragSize || pos+gap+uint64(n) > fragSize || n > len(rest)-w1-w2 {
				return malformed()
			}
			if len(data) == 0 {
				first = pos + gap
			} else {
				data = append(data, make([]byte, gap)...)
			}
			data = append(data, rest[w1+w2:w1+w2+n]...)
			rest, pos = rest[w1+w2+n:], pos+gap+uint64(n)
		}
		*buf = data
		at = i*fragSize + int64(first)
	case skip > fragSize || int64(skip)+int64(len(val)-w) > fragSize:
		return malformed()
	default:
		at, data = i*fragSize+int64(skip), val[w:]
	}
	if at+int64(len(data)) > m.count {
		return 0, nil, fragCorrupt(userKey, fmt.Sprintf("fragment %d reaches past the length %d", i, m.count))
	}
	return at, data, nil
}

// readFragString returns the whole of the fragmented string m at userKey.
func (ks *keyspace) readFragString(r lsmgo.Reader, userKey []byte, m collMeta) ([]byte, error) {
	return ks.fragRead(r, userKey, m, 0, m.count)
}
