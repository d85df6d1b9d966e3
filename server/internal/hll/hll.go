package hll

import (
	"encoding/binary"
	"errors"
)

const (
	// Registers is the number of registers of every HyperLogLog.
	Registers = 1 << indexBits
	indexBits = 14
	// maxCount is the largest register value an element can produce.
	maxCount = 64 - indexBits + 1

	headerSize = 16
	// DenseSize is the exact length of a dense value.
	DenseSize = headerSize + Registers*6/8

	encDense  = 0
	encSparse = 1

	// DefaultSparseMaxBytes is Redis' default hll-sparse-max-bytes.
	DefaultSparseMaxBytes = 3000
)

// ErrNotHLL reports a string value that is not a HyperLogLog (bad length,
// magic or encoding); the text is Redis' reply.
//
//lint:ignore ST1005 the text is Redis' reply, final period included
var ErrNotHLL = errors.New("WRONGTYPE Key is not a valid HyperLogLog string value.")

// ErrCorrupt reports a sparse value whose runs do not add up to the
// register count; the text is Redis' reply.
var ErrCorrupt = errors.New("INVALIDOBJ Corrupted HLL object detected")

// Check reports whether v passes Redis' header checks: at least a header,
// the magic, a known encoding, and a dense value's exact size. A sparse
// body is checked only where it is used.
func Check(v []byte) error {
	if len(v) < headerSize || string(v[:4]) != "HYLL" || v[4] > encSparse {
		return ErrNotHLL
	}
	if v[4] == encDense && len(v) != DenseSize {
		return ErrNotHLL
	}
	return nil
}

// New returns an empty HyperLogLog: sparse, one long zero run, with the
// cached cardinality marked invalid, as every Redis command that creates
// one (PFADD, PFMERGE) leaves it.
func New() []byte {
	v := make([]byte, headerSize, headerSize+2)
	copy(v, "HYLL")
	v[4] = encSparse
	invalidateCache(v)
	return appendZeroRun(v, Registers)
}

func invalidateCache(v []byte) { v[15] |= 0x80 }

// WouldChange reports whether adding elems to the HyperLogLog v (checked
// with Check first) would raise a register, without copying v: most adds
// to a well-filled HyperLogLog change nothing, and then need no write.
// A corrupt value where an element's register lies answers true, so that
// Add reports the corruption.
func WouldChange(v []byte, elems [][]byte) bool {
	for _, e := range elems {
		index, count := registerOf(e)
		cur, ok := registerAt(v, index)
		if !ok || count > cur {
			return true
		}
	}
	return false
}

// registerAt reads one register; ok is false when a sparse body ends
// before it.
func registerAt(v []byte, index int) (uint8, bool) {
	if v[4] == encDense {
		return denseGet(v[headerSize:], index), true
	}
	body := v[headerSize:]
	first := 0
	for p := 0; p < len(body); {
		span, size := opLen(body, p)
		if index < first+span {
			if isVal(body[p]) {
				return valValue(body[p]), true
			}
			return 0, true
		}
		first += span
		p += size
	}
	return 0, false
}

// Add adds elems to the HyperLogLog v (checked with Check first) and
// returns the new value and whether any register grew. v is not modified;
// the result may share no memory with it. sparseMax is hll-sparse-max-bytes.
// On a corrupt value it returns ErrCorrupt and nothing else.
func Add(v []byte, elems [][]byte, sparseMax int) ([]byte, bool, error) {
	out := append([]byte(nil), v...)
	changed := false
	for _, e := range elems {
		index, count := registerOf(e)
		var grew bool
		var err error
		out, grew, err = set(out, index, count, sparseMax)
		if err != nil {
			return nil, false, err
		}
		changed = changed || grew
	}
	if changed {
		invalidateCache(out)
	}
	return out, changed, nil
}

// set raises register index of v to count if it is lower, converting v
// to dense where Redis does.
func set(v []byte, index int, count uint8, sparseMax int) ([]byte, bool, error) {
	if v[4] == encDense {
		return v, denseSet(v[headerSize:], index, count), nil
	}
	return sparseSet(v, index, count, sparseMax)
}

// Cached returns v's cached cardinality, if valid.
func Cached(v []byte) (uint64, bool) {
	return binary.LittleEndian.Uint64(v[8:16]), v[15]&0x80 == 0
}

// Count returns v's cardinality: the cached one when valid, else the
// estimate. When it computed the estimate, updated is v with the estimate
// cached (a new slice: the caller stores it, as Redis' PFCOUNT writes its
// key); else updated is nil.
func Count(v []byte) (card uint64, updated []byte, err error) {
	if card, ok := Cached(v); ok {
		return card, nil, nil
	}
	var hist histogram
	if v[4] == encDense {
		hist.addDense(v[headerSize:])
	} else if !hist.addSparse(v[headerSize:]) {
		return 0, nil, ErrCorrupt
	}
	card = hist.estimate()
	updated = append([]byte(nil), v...)
	binary.LittleEndian.PutUint64(updated[8:16], card)
	return card, updated, nil
}

// Union holds the register-wise maximum of several HyperLogLogs, one byte
// per register: PFCOUNT of many keys and PFMERGE build one.
type Union struct {
	regs     [Registers]uint8
	anyDense bool
}

// Merge raises u's registers to v's (checked with Check first).
func (u *Union) Merge(v []byte) error {
	if v[4] == encDense {
		u.anyDense = true
		body := v[headerSize:]
		for i := range u.regs {
			u.regs[i] = max(u.regs[i], denseGet(body, i))
		}
		return nil
	}
	if !walkSparse(v[headerSize:], func(first, n int, val uint8) {
		for i := first; i < first+n; i++ {
			u.regs[i] = max(u.regs[i], val)
		}
	}) {
		return ErrCorrupt
	}
	return nil
}

// Count estimates the cardinality of the union.
func (u *Union) Count() uint64 {
	var hist histogram
	for _, r := range u.regs {
		hist[r]++
	}
	return hist.estimate()
}

// Store writes the union into dest (nil: a new key) as PFMERGE does: dest
// becomes dense when any merged value was dense, each nonzero register is
// set in index order (so a sparse dest may turn dense on the way), and the
// cached cardinality is marked invalid. dest must have been merged into u.
func (u *Union) Store(dest []byte, sparseMax int) ([]byte, error) {
	out := New()
	if dest != nil {
		out = append([]byte(nil), dest...)
	}
	if u.anyDense && out[4] == encSparse {
		var err error
		if out, err = sparseToDense(out); err != nil {
			return nil, err
		}
	}
	for i, r := range u.regs {
		if r == 0 {
			continue
		}
		var err error
		if out, _, err = set(out, i, r, sparseMax); err != nil {
			return nil, err
		}
	}
	invalidateCache(out)
	return out, nil
}
