package server

import (
	"strconv"
	"strings"
)

func init() { diffGroups = append(diffGroups, diffGroup{"floats", 6, diffFloats}) }

// diffFloats generates INCRBYFLOAT and HINCRBYFLOAT sequences over values
// that are not exact in binary, of every magnitude, some stored first by
// SET or HSET and read back by GET or HGET, so that the long double
// arithmetic and its printing (doc/server.md, INCRBYFLOAT) are compared
// digit for digit. Its keys are its own so that other groups' integers do
// not dilute it.
func diffFloats(g *diffGen) diffCmd {
	k := "fl" + strconv.Itoa(g.rng.IntN(3))
	f := "f" + strconv.Itoa(g.rng.IntN(2))
	switch g.rng.IntN(10) {
	case 0:
		return diffCmdOf(exact, "SET", k, g.float())
	case 1:
		return diffCmdOf(exact, "HSET", "h"+k, f, g.float())
	case 2:
		return diffCmdOf(exact, "GET", k)
	case 3:
		return diffCmdOf(exact, "HGET", "h"+k, f)
	case 4:
		return diffCmdOf(exact, "DEL", k, "h"+k)
	case 5, 6:
		return diffCmdOf(exact, "HINCRBYFLOAT", "h"+k, f, g.float())
	default:
		return diffCmdOf(exact, "INCRBYFLOAT", k, g.float())
	}
}

// float is a number as a client would write it: decimals of 1 to 20
// significant digits, in plain or exponent notation, at magnitudes from
// far below 1e-17 (where the printed sum rounds to 0) to beyond float64's
// range (which a long double still holds), and now and then a value that
// is not a number or is infinite.
func (g *diffGen) float() string {
	switch g.rng.IntN(12) {
	case 0:
		return g.pick("0.1", "0.2", "0.3", "1.1", "2.2", "-0.1", "10.5e20", "1e308", "1.7976931348623157e308",
			"1e400", "-1e4000", "1e5000", "1e-5000", "5e-324", "0x1p3", "inf", "-inf", "nan", "1e", "", " 1", "1.5e3", "-0", "0e9999")
	case 1:
		return strconv.Itoa(g.rng.IntN(2001) - 1000)
	}
	var b strings.Builder
	if g.rng.IntN(3) == 0 {
		b.WriteByte('-')
	}
	digits := 1 + g.rng.IntN(20)
	point := g.rng.IntN(digits + 1)
	for i := range digits {
		if i == point && i > 0 {
			b.WriteByte('.')
		}
		b.WriteByte(byte('0' + g.rng.IntN(10)))
	}
	switch g.rng.IntN(4) {
	case 0:
		b.WriteString("e" + strconv.Itoa(g.rng.IntN(81)-40))
	case 1:
		b.WriteString("e" + strconv.Itoa(g.rng.IntN(1001)-500))
	}
	return b.String()
}
