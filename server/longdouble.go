package server

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// INCRBYFLOAT and HINCRBYFLOAT compute as Redis does on x86-64: the
// stored text and the increment are read into a long double (the x87
// 80-bit format: a 64-bit mantissa, exponents down to -16382), added, and
// the sum printed with "%.17Lf", trailing zeros removed. float64 cannot
// stand in for it: 0.1 + 0.2 is 0.30000000000000004 in float64 but prints
// as 0.3 from a long double. big.Float with 64 bits of precision rounding
// to nearest even is that format, without its exponent bounds, which
// parseLongDouble and addLongDouble apply.
const (
	ldMantBits = 64
	// ldMaxExp and ldMinExp bound big.Float's MantExp (x = m × 2^exp,
	// 0.5 <= m < 1) for a finite long double, denormals included.
	ldMaxExp = 16384
	ldMinExp = -16444
	// ldMaxChars is Redis' MAX_LONG_DOUBLE_CHARS: longer text is not a
	// number.
	ldMaxChars = 5 * 1024
)

// parseLongDouble reads b as Redis' string2ld does (strtold, with no
// surrounding spaces, not NaN, and out of range when it overflows or
// underflows to zero). The result may be infinite ("inf" as text).
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars || isSpaceByte(b[0]) || isSpaceByte(b[len(b)-1]) {
		return nil, false
	}
	s := string(b)
	if isHexFloat(s) && !strings.ContainsAny(s, "pP") {
		s += "p0" // C's hexadecimal floats may omit the exponent; Go's may not.
	}
	// ParseFloat checks the syntax and recognizes infinities; the value
	// itself is read again below with a long double's precision and range.
	f, err := strconv.ParseFloat(s, 64)
	x := new(big.Float).SetPrec(ldMantBits)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f):
		return nil, false
	case err == nil && math.IsInf(f, 0):
		return x.SetInf(f < 0), true
	case zeroMantissa(b):
		return x, true // zero, whatever its exponent; not an underflow
	}
	if isHexFloat(s) {
		if _, _, err := x.Parse(s, 0); err != nil {
			return nil, false
		}
	} else {
		// Past these decimal exponents a nonzero value of at most
		// ldMaxChars digits is out of range; Rat would compute 10^exp.
		if e := decimalExponent(s); e > 11000 || e < -11000 {
			return nil, false
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return nil, false
		}
		x.SetRat(r) // exact, then one rounding, as strtold does
	}
	if exp := x.MantExp(nil); exp > ldMaxExp || exp < ldMinExp {
		return nil, false
	}
	return x, true
}

// decimalExponent returns the exponent written after 'e' in s, clamped
// to ±1e9, or 0 without one.
func decimalExponent(s string) int64 {
	i := strings.LastIndexAny(s, "eE")
	if i < 0 {
		return 0
	}
	e, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil { // only out of range: ParseFloat accepted the syntax
		if strings.HasPrefix(s[i+1:], "-") {
			return -1e9
		}
		return 1e9
	}
	return max(-1e9, min(e, 1e9))
}

// addLongDouble returns the text Redis stores for a + b, or false when
// the sum is NaN or infinite.
func addLongDouble(a, b *big.Float) (string, bool) {
	if a.IsInf() || b.IsInf() {
		return "", false // infinite, or NaN for +inf + -inf
	}
	sum := new(big.Float).SetPrec(ldMantBits).Add(a, b)
	if sum.MantExp(nil) > ldMaxExp {
		return "", false
	}
	return formatLongDouble(sum), true
}

// formatLongDouble prints x as Redis' ld2string with LD_STR_HUMAN does:
// "%.17Lf", then the trailing zeros of the fraction and a bare point
// removed, and "-0" printed as "0". big.Float rounds the exact binary
// value half to even, as glibc's printf does.
func formatLongDouble(x *big.Float) string {
	s := x.Text('f', 17)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}
