package bitops

import "math"

// Field is a BITFIELD integer type: i1..i64 or u1..u63.
type Field struct {
	Signed bool
	Bits   uint
}

// ParseField parses a type argument such as "i16" or "u8" (lower case
// only, as in Redis). Redis reads the width as a C string, so a NUL ends
// it.
func ParseField(arg []byte, parseInt func([]byte) (int64, bool)) (Field, bool) {
	if len(arg) == 0 {
		return Field{}, false
	}
	var f Field
	switch arg[0] {
	case 'i':
		f.Signed = true
	case 'u':
	default:
		return Field{}, false
	}
	width := arg[1:]
	for i, c := range width {
		if c == 0 {
			width = width[:i]
			break
		}
	}
	n, ok := parseInt(width)
	if !ok || n < 1 || n > 64 || (!f.Signed && n > 63) {
		return Field{}, false
	}
	f.Bits = uint(n)
	return f, true
}

// Overflow is a BITFIELD OVERFLOW mode.
type Overflow uint8

// The overflow modes: wrap around, saturate at the type's limits, or fail
// the operation (reply null, write nothing).
const (
	Wrap Overflow = iota
	Sat
	Fail
)

// raw reads f's bits at offset, unsigned, zero past the end of s.
func (f Field) raw(s []byte, offset uint64) uint64 {
	var v uint64
	for i := range uint64(f.Bits) {
		v = v<<1 | uint64(GetBit(s, offset+i))
	}
	return v
}

// Get returns the field's value at offset.
func (f Field) Get(s []byte, offset uint64) int64 {
	v := f.raw(s, offset)
	if f.Signed {
		return f.signExtend(v)
	}
	return int64(v)
}

func (f Field) signExtend(v uint64) int64 {
	if f.Bits < 64 && v&(1<<(f.Bits-1)) != 0 {
		v |= math.MaxUint64 << f.Bits
	}
	return int64(v)
}

// put writes the low f.Bits bits of v at offset; s must hold them.
func (f Field) put(s []byte, offset uint64, v uint64) {
	for i := range uint64(f.Bits) {
		SetBit(s, offset+i, v>>(uint64(f.Bits)-1-i)&1 != 0)
	}
}

// limits returns the smallest and largest value of a signed field, or
// 0 and the largest of an unsigned one.
func (f Field) limits() (lo int64, hi uint64) {
	if f.Signed {
		hi = 1<<(f.Bits-1) - 1
		return -int64(hi) - 1, hi
	}
	return 0, 1<<f.Bits - 1
}

// Set writes v at offset under mode ow and returns the previous value;
// ok is false when ow is Fail and v does not fit (nothing is written).
// As in Redis, an unsigned field takes v's 64-bit two's-complement
// pattern, so a negative v overflows upward (SAT gives the maximum).
func (f Field) Set(s []byte, offset uint64, v int64, ow Overflow) (old int64, ok bool) {
	old = f.Get(s, offset)
	nv, ok := f.fit(v, 0, ow)
	if ok {
		f.put(s, offset, nv)
	}
	return old, ok
}

// IncrBy adds incr to the field at offset under mode ow and returns the
// new value; ok is false when ow is Fail and the sum overflows.
func (f Field) IncrBy(s []byte, offset uint64, incr int64, ow Overflow) (nv int64, ok bool) {
	raw, ok := f.fit(f.Get(s, offset), incr, ow)
	if !ok {
		return 0, false
	}
	f.put(s, offset, raw)
	if f.Signed {
		return f.signExtend(raw), true
	}
	return int64(raw), true
}

// fit returns the bit pattern of value+incr in the field under mode ow;
// value is the field's current value (incr 0: a value to store).
func (f Field) fit(value, incr int64, ow Overflow) (uint64, bool) {
	lo, hi := f.limits()
	mask := uint64(math.MaxUint64)
	if f.Bits < 64 {
		mask = 1<<f.Bits - 1
	}
	var up, down bool
	if f.Signed {
		// Redis' test, wrapping as it does: a value to store within hi of
		// -2^63 makes hi-value wrap negative, so it counts as overflowing
		// upward (SAT stores the maximum), where a test without the wrap
		// would say downward.
		maxIncr := int64(uint64(hi) - uint64(value))
		minIncr := int64(uint64(lo) - uint64(value))
		up = value > int64(hi) || (f.Bits != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr)
		down = !up && (value < lo || (f.Bits != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr))
	} else {
		u := uint64(value)
		up = u > hi || (incr > 0 && uint64(incr) > hi-u)
		down = !up && incr < 0 && uint64(-incr) > u
	}
	if !up && !down {
		return uint64(value+incr) & mask, true
	}
	switch ow {
	case Sat:
		if up {
			return hi & mask, true
		}
		return uint64(lo) & mask, true
	case Fail:
		return 0, false
	}
	return (uint64(value) + uint64(incr)) & mask, true
}
