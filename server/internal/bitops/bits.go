package bitops

import "math/bits"

// GetBit returns bit offset of s (0 past its end).
func GetBit(s []byte, offset uint64) int {
	i := offset >> 3
	if i >= uint64(len(s)) {
		return 0
	}
	return int(s[i]>>(7-offset&7)) & 1
}

// SetBit sets bit offset of s to on and returns its previous value; s
// must hold the bit.
func SetBit(s []byte, offset uint64, on bool) int {
	i, mask := offset>>3, byte(0x80)>>(offset&7)
	old := 0
	if s[i]&mask != 0 {
		old = 1
	}
	if on {
		s[i] |= mask
	} else {
		s[i] &^= mask
	}
	return old
}

// Grow returns s extended with zero bytes to hold bit maxBit.
func Grow(s []byte, maxBit uint64) []byte {
	need := int(maxBit>>3) + 1
	if need <= len(s) {
		return s
	}
	return append(s, make([]byte, need-len(s))...)
}

// Range is a BITCOUNT or BITPOS range as the client gave it: inclusive
// indexes, negative ones counting from the end, in bytes or (Bit) bits.
type Range struct {
	Start, End int64
	Bit        bool
}

// bitSpan turns r into an inclusive span of bit positions within a
// string of n bytes, clamping as Redis does; empty is true when nothing
// is left.
func (r Range) bitSpan(n int) (first, last int64, empty bool) {
	total := int64(n)
	if r.Bit {
		total <<= 3
	}
	start, end := r.Start, r.End
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, 0, true
	}
	if r.Bit {
		return start, end, false
	}
	return start << 3, end<<3 + 7, false
}

// Count returns the number of set bits of s in r (BITCOUNT with a range).
func Count(s []byte, r Range) int64 {
	// Redis answers 0 for two negative indexes in the wrong order before
	// clamping, which would otherwise turn them into a range at the start.
	if r.Start < 0 && r.End < 0 && r.Start > r.End {
		return 0
	}
	first, last, empty := r.bitSpan(len(s))
	if empty {
		return 0
	}
	return countSpan(s, first, last)
}

// CountAll returns the number of set bits of s (BITCOUNT without range).
func CountAll(s []byte) int64 { return countSpan(s, 0, int64(len(s))*8-1) }

// countSpan counts the set bits in the inclusive bit span [first, last].
func countSpan(s []byte, first, last int64) int64 {
	if last < first {
		return 0
	}
	fb, lb := first>>3, last>>3
	n := popcount(s[fb : lb+1])
	n -= int64(bits.OnesCount8(s[fb] &^ (0xff >> (first & 7))))
	n -= int64(bits.OnesCount8(s[lb] & (0x7f >> (last & 7))))
	return n
}

func popcount(b []byte) int64 {
	var n int
	for len(b) >= 8 {
		n += bits.OnesCount64(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
		b = b[8:]
	}
	for _, c := range b {
		n += bits.OnesCount8(c)
	}
	return int64(n)
}

// Pos returns the position of the first bit equal to bit in s within r
// (nil: the whole string), or -1. Looking for a 0 in a range without an
// explicit end finds the first bit past the string when the range holds
// none, since the string reads as followed by zeros; with an explicit
// end (endGiven) it finds nothing, as in Redis.
func Pos(s []byte, bit int, r *Range, endGiven bool) int64 {
	whole := Range{Start: 0, End: -1}
	if r == nil {
		r = &whole
	}
	first, last, empty := r.bitSpan(len(s))
	if empty {
		return -1
	}
	if p := find(s, bit, first, last); p >= 0 {
		return p
	}
	if bit == 0 && !endGiven {
		return last + 1
	}
	return -1
}

// find returns the first bit equal to bit in the inclusive span, or -1.
func find(s []byte, bit int, first, last int64) int64 {
	skip := byte(0) // a byte with no wanted bit
	if bit == 0 {
		skip = 0xff
	}
	for p := first; p <= last; {
		if p&7 == 0 && p+7 <= last && s[p>>3] == skip {
			p += 8
			continue
		}
		if int(s[p>>3]>>(7-p&7))&1 == bit {
			return p
		}
		p++
	}
	return -1
}
