package resp

import (
	"math"
	"strconv"
)

// AppendDouble appends f the way Redis 7.2+ prints doubles in replies
// (util.c d2string): "nan", "inf", "-inf", "0", "-0"; integral values within
// ±2^62 as plain integers; anything else as the shortest decimal that reads
// back as f, laid out like Redis' fpconv_dtoa: plain digits for moderate
// exponents, otherwise d.ddde±X with an unpadded exponent. Matching that
// layout keeps ZSCORE and INCRBYFLOAT replies byte-identical to Redis'.
func AppendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0"...)
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits in the form d.ddde±XX.
	var sci [32]byte
	s := strconv.AppendFloat(sci[:0], f, 'e', -1, 64)
	e := len(s) - 1
	for s[e] != 'e' {
		e--
	}
	var dig [24]byte
	digits := append(append(dig[:0], s[0]), s[min(2, e):e]...)
	exp := 0
	for _, c := range s[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if s[e+1] == '-' {
		exp = -exp
	}
	nd := len(digits)
	k := exp - (nd - 1) // f == digits × 10^k
	absExp := max(exp, -exp)
	switch {
	case k >= 0 && absExp < nd+7:
		dst = append(dst, digits...)
		for range k {
			dst = append(dst, '0')
		}
	case k < 0 && (k > -7 || absExp < 4):
		if point := nd + k; point > 0 {
			dst = append(dst, digits[:point]...)
			dst = append(dst, '.')
			dst = append(dst, digits[point:]...)
		} else {
			dst = append(dst, '0', '.')
			for range -point {
				dst = append(dst, '0')
			}
			dst = append(dst, digits...)
		}
	default:
		dst = append(dst, digits[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
		} else {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(absExp), 10)
	}
	return dst
}
