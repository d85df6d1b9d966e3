package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// String encodings: the special lengths (top bits 11) that start a
// string stored as an integer or compressed.
const (
	encInt8  = 0xc0
	encInt16 = 0xc1
	encInt32 = 0xc2
	encLZF   = 0xc3
)

// AppendLen appends an RDB length: 6, 14, 32 or 64 bits.
func AppendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, 0x40|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0x81), n)
}

// AppendString appends s as an RDB string, as Redis' rdbSaveRawString
// does: a decimal integer of at most 11 bytes that fits 32 bits as an
// integer encoding, anything else as its bytes.
func AppendString(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := CanonicalInt(s); ok {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(dst, encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(dst, encInt16), uint16(v))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return binary.LittleEndian.AppendUint32(append(dst, encInt32), uint32(v))
			}
		}
	}
	dst = AppendLen(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBinaryDouble appends f as TypeZSet2 stores a score: its IEEE bits,
// little-endian.
func AppendBinaryDouble(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// CanonicalInt parses s as Redis' string2ll does for encodings: a decimal
// int64 written exactly as Redis would print it (no sign '+', no leading
// zero, no "-0", no spaces).
func CanonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	return v, string(strconv.AppendInt(buf[:0], v, 10)) == string(s)
}
