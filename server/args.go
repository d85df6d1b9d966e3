package server

import (
	"math"
	"strconv"
)

// parseInt parses a decimal int64 as Redis' string2ll does, which is what
// decides "value is not an integer or out of range": an optional '-', no
// '+', no spaces, no leading zeros, no "-0", at most 20 bytes.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || digits[0] == '0' && (len(digits) > 1 || len(b) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// parseFloat parses a number as Redis' string2ld does for INCRBYFLOAT: no
// surrounding spaces, and not NaN. Infinity parses; the caller rejects an
// infinite result.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5*1024 || isSpaceByte(b[0]) || isSpaceByte(b[len(b)-1]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// is reports whether arg equals the upper-case option name opt, ignoring
// case as Redis does for every option keyword.
func is(arg []byte, opt string) bool {
	if len(arg) != len(opt) {
		return false
	}
	for i := range arg {
		c := arg[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != opt[i] {
			return false
		}
	}
	return true
}
