package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Reader decodes the RDB items of a serialized value, front to back.
// Strings it returns may share memory with the payload.
type Reader struct {
	p []byte
	// Budget is how many bytes LZF-compressed strings may still expand
	// to; a string past it fails with ErrBudget. Plain strings are
	// bounded by the payload itself and do not count.
	Budget int64
}

// NewReader returns a reader of body (Open's result) whose compressed
// strings may expand to budget bytes in all.
func NewReader(body []byte, budget int64) *Reader { return &Reader{p: body, Budget: budget} }

// Done reports whether every byte has been read: Redis refuses a payload
// with bytes after its value.
func (r *Reader) Done() bool { return len(r.p) == 0 }

func (r *Reader) take(n uint64) ([]byte, error) {
	if uint64(len(r.p)) < n {
		return nil, ErrFormat
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b, nil
}

// Byte reads one byte: a type or an opcode.
func (r *Reader) Byte() (byte, error) {
	b, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// lenOrEncoding reads an RDB length, or the encoding byte of a special
// string (special true).
func (r *Reader) lenOrEncoding() (n uint64, special bool, err error) {
	first, err := r.Byte()
	if err != nil {
		return 0, false, err
	}
	switch first >> 6 {
	case 0:
		return uint64(first & 0x3f), false, nil
	case 1:
		lo, err := r.Byte()
		return uint64(first&0x3f)<<8 | uint64(lo), false, err
	case 3:
		return uint64(first), true, nil
	}
	switch first {
	case 0x80:
		v, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(v)), false, nil
	case 0x81:
		v, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(v), false, nil
	}
	return 0, false, ErrFormat
}

// Len reads an RDB length: a count of elements or nodes.
func (r *Reader) Len() (uint64, error) {
	n, special, err := r.lenOrEncoding()
	if err == nil && special {
		err = ErrFormat
	}
	return n, err
}

// String reads an RDB string in any of its encodings: plain, an 8, 16 or
// 32-bit integer, or LZF-compressed.
func (r *Reader) String() ([]byte, error) {
	n, special, err := r.lenOrEncoding()
	if err != nil {
		return nil, err
	}
	if !special {
		return r.take(n)
	}
	var v int64
	switch n {
	case encInt8:
		b, err := r.take(1)
		if err != nil {
			return nil, err
		}
		v = int64(int8(b[0]))
	case encInt16:
		b, err := r.take(2)
		if err != nil {
			return nil, err
		}
		v = int64(int16(binary.LittleEndian.Uint16(b)))
	case encInt32:
		b, err := r.take(4)
		if err != nil {
			return nil, err
		}
		v = int64(int32(binary.LittleEndian.Uint32(b)))
	case encLZF:
		return r.lzfString()
	default:
		return nil, ErrFormat
	}
	return strconv.AppendInt(nil, v, 10), nil
}

func (r *Reader) lzfString() ([]byte, error) {
	clen, err := r.Len()
	if err != nil {
		return nil, err
	}
	ulen, err := r.Len()
	if err != nil {
		return nil, err
	}
	comp, err := r.take(clen)
	if err != nil {
		return nil, err
	}
	if ulen == 0 || int64(ulen) < 0 || int64(ulen) > r.Budget {
		if ulen == 0 {
			return nil, ErrFormat
		}
		return nil, ErrBudget
	}
	r.Budget -= int64(ulen)
	return lzfDecompress(comp, int(ulen))
}

// BinaryDouble reads a TypeZSet2 score: 8 bytes, little-endian IEEE.
func (r *Reader) BinaryDouble() (float64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}

// StringDouble reads a TypeZSet score: a length byte (253 NaN, 254 +inf,
// 255 -inf) and that many bytes of decimal text.
func (r *Reader) StringDouble() (float64, error) {
	n, err := r.Byte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	b, err := r.take(uint64(n))
	if err != nil {
		return 0, err
	}
	return ParseDouble(b)
}

// ParseDouble parses a score written as text, as Redis' strtod would.
func ParseDouble(b []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, ErrFormat
	}
	return f, nil
}
