package rdb

import (
	"encoding/binary"
	"strconv"
)

// A ziplist (the small-collection encoding before Redis 7) is a 4-byte
// total size, a 4-byte offset of the last entry and a 2-byte entry count
// (65535: too many to count), all little-endian, the entries, and 0xff.
// Each entry is the previous entry's length (1 byte, or 0xfe and 4
// bytes), its encoding and its data.
const ziplistHeader = 10

// WalkZiplist calls fn with each entry of the ziplist zl in order, an
// integer entry as its decimal text, until fn fails; like WalkListpack.
func WalkZiplist(zl []byte, fn func(entry []byte) error) error {
	if len(zl) < ziplistHeader+1 || binary.LittleEndian.Uint32(zl) != uint32(len(zl)) || zl[len(zl)-1] != 0xff {
		return ErrFormat
	}
	declared := int(binary.LittleEndian.Uint16(zl[8:]))
	p := zl[ziplistHeader : len(zl)-1]
	var num [20]byte
	count, prev := 0, 0
	for len(p) > 0 {
		hdr, prevLen := 1, int(p[0])
		if p[0] == 0xfe {
			if len(p) < 5 {
				return ErrFormat
			}
			hdr, prevLen = 5, int(binary.LittleEndian.Uint32(p[1:]))
		}
		if prevLen != prev || hdr >= len(p) {
			return ErrFormat
		}
		entry, size, err := ziplistEntry(p[hdr:], num[:0])
		if err != nil {
			return err
		}
		if err := fn(entry); err != nil {
			return err
		}
		prev = hdr + size
		p = p[prev:]
		count++
	}
	if declared != 65535 && declared != count {
		return ErrFormat
	}
	return nil
}

// ziplistEntry decodes the encoding and data at the start of p.
func ziplistEntry(p, num []byte) (entry []byte, size int, err error) {
	c := p[0]
	switch c >> 6 {
	case 0:
		return listpackString(p, 1, int(c&0x3f))
	case 1:
		if len(p) < 2 {
			return nil, 0, ErrFormat
		}
		return listpackString(p, 2, int(c&0x3f)<<8|int(p[1]))
	case 2:
		if c != 0x80 || len(p) < 5 {
			return nil, 0, ErrFormat
		}
		return listpackString(p, 5, int(binary.BigEndian.Uint32(p[1:])))
	}
	var v int64
	switch {
	case c == 0xc0:
		size = 3
	case c == 0xd0:
		size = 5
	case c == 0xe0:
		size = 9
	case c == 0xf0:
		size = 4
	case c == 0xfe:
		size = 2
	case c >= 0xf1 && c <= 0xfd:
		return strconv.AppendInt(num, int64(c&0x0f)-1, 10), 1, nil
	default:
		return nil, 0, ErrFormat
	}
	if len(p) < size {
		return nil, 0, ErrFormat
	}
	switch c {
	case 0xc0:
		v = int64(int16(binary.LittleEndian.Uint16(p[1:])))
	case 0xd0:
		v = int64(int32(binary.LittleEndian.Uint32(p[1:])))
	case 0xe0:
		v = int64(binary.LittleEndian.Uint64(p[1:]))
	case 0xf0:
		v = int64(int32(uint32(p[1])<<8|uint32(p[2])<<16|uint32(p[3])<<24) >> 8)
	default:
		v = int64(int8(p[1]))
	}
	return strconv.AppendInt(num, v, 10), size, nil
}
