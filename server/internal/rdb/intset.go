package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// An intset (Redis' encoding of a small set of integers) is the width of
// every member in bytes (2, 4 or 8) and the member count, both 4 bytes
// little-endian, then the members, little-endian, strictly ascending.

// AppendIntset appends the intset of vals, which are sorted ascending and
// distinct, in the narrowest width that holds them all.
func AppendIntset(dst []byte, vals []int64) []byte {
	width := 2
	if len(vals) > 0 {
		lo, hi := vals[0], vals[len(vals)-1]
		switch {
		case lo < math.MinInt32 || hi > math.MaxInt32:
			width = 8
		case lo < math.MinInt16 || hi > math.MaxInt16:
			width = 4
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(width))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(vals)))
	for _, v := range vals {
		switch width {
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	}
	return dst
}

// WalkIntset calls fn with each member of the intset is, as decimal text,
// until fn fails. Members out of order or repeated are ErrFormat, as in
// Redis' intsetValidateIntegrity.
func WalkIntset(is []byte, fn func(member []byte) error) error {
	if len(is) < 8 {
		return ErrFormat
	}
	width := binary.LittleEndian.Uint32(is)
	count := uint64(binary.LittleEndian.Uint32(is[4:]))
	if (width != 2 && width != 4 && width != 8) || uint64(len(is)-8) != count*uint64(width) {
		return ErrFormat
	}
	var num [20]byte
	var prev int64
	for i := range int(count) {
		p := is[8+i*int(width):]
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= prev {
			return ErrFormat
		}
		prev = v
		if err := fn(strconv.AppendInt(num[:0], v, 10)); err != nil {
			return err
		}
	}
	return nil
}
