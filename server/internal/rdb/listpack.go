package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// A listpack (Redis 7's small-collection encoding) is a 4-byte total
// size and a 2-byte entry count (65535: too many to count), both
// little-endian, the entries, and the byte 0xff. Each entry is its
// encoding and data, then the length of those two again as a "backlen"
// of 1 to 5 bytes, which lets Redis walk the list backwards.
const (
	listpackHeader  = 6
	listpackEnd     = 0xff
	listpackMaxCnt  = 65535
	listpackMaxSize = math.MaxUint32
)

// ListpackWriter builds one listpack.
type ListpackWriter struct {
	buf   []byte
	count int
}

// Reset empties the writer, keeping its buffer.
func (w *ListpackWriter) Reset() {
	w.buf = append(w.buf[:0], make([]byte, listpackHeader)...)
	w.count = 0
}

// Count is the number of entries appended since Reset.
func (w *ListpackWriter) Count() int { return w.count }

// Size is the listpack's size in bytes if it were finished now.
func (w *ListpackWriter) Size() int { return len(w.buf) + 1 }

// Append adds s, as Redis' lpAppend does: a canonical decimal integer in
// the smallest integer encoding that holds it, anything else as a string.
func (w *ListpackWriter) Append(s []byte) {
	if len(w.buf) < listpackHeader {
		w.Reset()
	}
	if v, ok := CanonicalInt(s); ok {
		w.AppendInt(v)
		return
	}
	start := len(w.buf)
	switch n := len(s); {
	case n < 64:
		w.buf = append(w.buf, 0x80|byte(n))
	case n < 4096:
		w.buf = append(w.buf, 0xe0|byte(n>>8), byte(n))
	default:
		w.buf = binary.LittleEndian.AppendUint32(append(w.buf, 0xf0), uint32(n))
	}
	w.buf = append(w.buf, s...)
	w.buf = appendBacklen(w.buf, uint64(len(w.buf)-start))
	w.count++
}

// AppendInt adds v in the smallest integer encoding that holds it.
func (w *ListpackWriter) AppendInt(v int64) {
	if len(w.buf) < listpackHeader {
		w.Reset()
	}
	start := len(w.buf)
	w.buf = appendListpackInt(w.buf, v)
	w.buf = appendBacklen(w.buf, uint64(len(w.buf)-start))
	w.count++
}

// Finish returns the finished listpack; it is valid until the next Reset
// or Append.
func (w *ListpackWriter) Finish() []byte {
	if len(w.buf) < listpackHeader {
		w.Reset()
	}
	out := append(w.buf, listpackEnd)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	binary.LittleEndian.PutUint16(out[4:], uint16(min(w.count, listpackMaxCnt)))
	return out
}

func appendListpackInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 127:
		return append(dst, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		return append(dst, 0xc0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return binary.LittleEndian.AppendUint16(append(dst, 0xf1), uint16(v))
	case v >= -1<<23 && v < 1<<23:
		u := uint32(v)
		return append(dst, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return binary.LittleEndian.AppendUint32(append(dst, 0xf3), uint32(v))
	}
	return binary.LittleEndian.AppendUint64(append(dst, 0xf4), uint64(v))
}

// appendBacklen appends n, an entry's length, 7 bits a byte, most
// significant first, every byte but the first with its top bit set.
func appendBacklen(dst []byte, n uint64) []byte {
	size := backlenSize(n)
	for i := size - 1; i >= 0; i-- {
		b := byte(n>>(7*uint(i))) & 0x7f
		if i != size-1 {
			b |= 0x80
		}
		dst = append(dst, b)
	}
	return dst
}

func backlenSize(n uint64) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// WalkListpack calls fn with each entry of the listpack lp in order, an
// integer entry as its decimal text, until fn fails. The slice passed to
// fn is valid only during the call. A listpack whose header, entries,
// backlens or count do not agree is ErrFormat.
func WalkListpack(lp []byte, fn func(entry []byte) error) error {
	if len(lp) < listpackHeader+1 || binary.LittleEndian.Uint32(lp) != uint32(len(lp)) || lp[len(lp)-1] != listpackEnd {
		return ErrFormat
	}
	declared := int(binary.LittleEndian.Uint16(lp[4:]))
	p := lp[listpackHeader : len(lp)-1]
	var num [20]byte
	count := 0
	for len(p) > 0 {
		entry, size, err := listpackEntry(p, num[:0])
		if err != nil {
			return err
		}
		back := backlenSize(uint64(size))
		if size+back > len(p) || !backlenMatches(p[size:size+back], uint64(size)) {
			return ErrFormat
		}
		if err := fn(entry); err != nil {
			return err
		}
		p = p[size+back:]
		count++
	}
	if declared != listpackMaxCnt && declared != count {
		return ErrFormat
	}
	return nil
}

func backlenMatches(b []byte, n uint64) bool {
	var buf [5]byte
	return string(appendBacklen(buf[:0], n)) == string(b)
}

// listpackEntry decodes the entry at the start of p: its value (an
// integer formatted into num) and the size of its encoding and data.
func listpackEntry(p, num []byte) (entry []byte, size int, err error) {
	c := p[0]
	var v int64
	switch {
	case c < 0x80:
		return strconv.AppendInt(num, int64(c), 10), 1, nil
	case c < 0xc0:
		return listpackString(p, 1, int(c&0x3f))
	case c < 0xe0:
		if len(p) < 2 {
			return nil, 0, ErrFormat
		}
		u := int64(c&0x1f)<<8 | int64(p[1])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		return strconv.AppendInt(num, u, 10), 2, nil
	case c < 0xf0:
		if len(p) < 2 {
			return nil, 0, ErrFormat
		}
		return listpackString(p, 2, int(c&0x0f)<<8|int(p[1]))
	}
	switch c {
	case 0xf0:
		if len(p) < 5 {
			return nil, 0, ErrFormat
		}
		return listpackString(p, 5, int(binary.LittleEndian.Uint32(p[1:])))
	case 0xf1:
		size = 3
	case 0xf2:
		size = 4
	case 0xf3:
		size = 5
	case 0xf4:
		size = 9
	default:
		return nil, 0, ErrFormat
	}
	if len(p) < size {
		return nil, 0, ErrFormat
	}
	switch c {
	case 0xf1:
		v = int64(int16(binary.LittleEndian.Uint16(p[1:])))
	case 0xf2:
		v = int64(int32(uint32(p[1])<<8|uint32(p[2])<<16|uint32(p[3])<<24) >> 8)
	case 0xf3:
		v = int64(int32(binary.LittleEndian.Uint32(p[1:])))
	default:
		v = int64(binary.LittleEndian.Uint64(p[1:]))
	}
	return strconv.AppendInt(num, v, 10), size, nil
}

func listpackString(p []byte, header, n int) ([]byte, int, error) {
	if n < 0 || n > len(p)-header {
		return nil, 0, ErrFormat
	}
	return p[header : header+n], header + n, nil
}
