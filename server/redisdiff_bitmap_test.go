package server

import (
	"strconv"
)

func init() { diffGroups = append(diffGroups, diffGroup{"bitmaps", 12, diffBitmaps}) }

// diffBitmaps generates the bit commands over keys of their own ("bm0" to
// "bm2", plain strings that GET compares byte for byte) and the shared
// keys, which hold other types (WRONGTYPE) and strings other groups edit.
// Malformed ranges go only to a key set just before ("bmx"): Redis 7.0
// looks the key up before it parses them, 7.2 (and lsmgo) after, so a
// missing or non-string key answers differently there (doc/server.md).
func diffBitmaps(g *diffGen) diffCmd {
	key := g.pick("bm0", "bm1", "bm2", "bm0", "bm1", g.key(), "bm-missing")
	switch g.rng.IntN(20) {
	case 0, 1, 2, 3:
		return diffCmdOf(exact, "SETBIT", key, g.bitOffset(), g.pick("1", "1", "0", "0", "1", "0", "1", "0", "1", "2", "-1", "x", ""))
	case 4, 5:
		return diffCmdOf(exact, "GETBIT", key, g.bitOffset())
	case 6, 7:
		args := []string{"BITCOUNT", key}
		if g.rng.IntN(3) > 0 {
			args = append(args, g.bitIndex(), g.bitIndex())
			if g.rng.IntN(2) == 0 {
				args = append(args, g.pick("BIT", "BYTE", "bit", "byte"))
			}
		}
		return diffCmdOf(exact, args...)
	case 8, 9:
		args := []string{"BITPOS", key, g.pick("0", "1")}
		switch g.rng.IntN(4) {
		case 1:
			args = append(args, g.bitIndex())
		case 2:
			args = append(args, g.bitIndex(), g.bitIndex())
		case 3:
			args = append(args, g.bitIndex(), g.bitIndex(), g.pick("BIT", "BYTE"))
		}
		return diffCmdOf(exact, args...)
	case 10:
		// Bad arguments on an existing string, which both versions parse
		// before anything else is decided.
		args := []string{g.pick("BITCOUNT", "BITPOS"), "bmx",
			g.pick("0", "1", "2", "x"), g.pick("0", "x", "-1", "9223372036854775808"), g.pick("1", "y", "-1"),
			g.pick("BIT", "BYTE", "BITS", ""), g.pick("BIT", "extra")}
		g.pending = append(g.pending, diffCmdOf(exact, args[:3+g.rng.IntN(5)]...))
		return diffCmdOf(exact, "SET", "bmx", g.pick("", "\xff\xf0\x00", "abc", "\x00\x00\x01"))
	case 11, 12:
		args := []string{"BITOP", g.pick("AND", "OR", "XOR", "NOT", "and", "xor", "nand"), g.pick("bm0", "bm1", "bm2", g.key())}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.pick("bm0", "bm1", "bm2", "bm-missing", g.key()))
		}
		return diffCmdOf(exact, args...)
	case 13, 14, 15:
		name := g.pick("BITFIELD", "BITFIELD", "BITFIELD", "BITFIELD_RO")
		args := []string{name, key}
		for range g.rng.IntN(5) {
			args = append(args, g.bitFieldOp()...)
		}
		return diffCmdOf(exact, args...)
	case 16, 17:
		return diffCmdOf(exact, "GET", g.pick("bm0", "bm1", "bm2"))
	case 18:
		k := g.pick("bm0", "bm1", "bm2")
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(exact, "APPEND", k, g.pick("\x00", "\xaa\x55", "abc"))
		}
		return diffCmdOf(exact, "SETRANGE", k, g.pick("0", "3", "12"), g.pick("\x00", "\xaa\x55", "\xff"))
	default:
		return diffCmdOf(exact, "DEL", g.pick("bm0", "bm1", "bm2"))
	}
}

// bitOffset is mostly a small offset, sometimes one that grows a string
// to a few KiB or past fragThreshold, and sometimes one at or past the
// limit.
func (g *diffGen) bitOffset() string {
	switch g.rng.IntN(10) {
	case 0:
		// Not 4294967295 itself: a SETBIT there writes a 512 MiB string.
		return g.pick("4294967296", "-1", "x", "1.5", "", "+3", "09", "99999999999999999999")
	case 1:
		return strconv.Itoa(g.rng.IntN(40000))
	case 2:
		if g.rng.IntN(4) == 0 {
			// Past fragThreshold: the key turns into a fragmented string.
			return strconv.Itoa(fragThreshold*8 + g.rng.IntN(80000))
		}
	}
	return strconv.Itoa(g.rng.IntN(80))
}

// bitIndex is a BITCOUNT/BITPOS range index.
func (g *diffGen) bitIndex() string {
	if g.rng.IntN(12) == 0 {
		return g.pick("-9223372036854775808", "9223372036854775807", "4294967296")
	}
	return strconv.Itoa(g.rng.IntN(60) - 30)
}

// bitFieldOp is one BITFIELD subcommand, occasionally malformed.
func (g *diffGen) bitFieldOp() []string {
	typ := g.pick("i", "u", "I", "U") + strconv.Itoa(1+g.rng.IntN(64))
	if g.rng.IntN(15) == 0 {
		typ = g.pick("u64", "i65", "i0", "x8", "", "u", "i-1")
	}
	off := strconv.Itoa(g.rng.IntN(100))
	switch g.rng.IntN(8) {
	case 0:
		off = "#" + strconv.Itoa(g.rng.IntN(10))
	case 1:
		off = g.pick("-1", "x", "#x", "4294967296", "#-1", "#9223372036854775807")
	}
	val := g.pick("0", "1", "-1", "100", "-100", "127", "-128", "255", "256",
		"9223372036854775807", "-9223372036854775808", "4611686018427387904", "x")
	if g.rng.IntN(3) == 0 {
		val = strconv.Itoa(g.rng.IntN(2000) - 1000)
	}
	switch g.rng.IntN(10) {
	case 0, 1, 2:
		return []string{g.pick("GET", "get"), typ, off}
	case 3, 4:
		return []string{g.pick("SET", "set"), typ, off, val}
	case 5, 6:
		return []string{g.pick("INCRBY", "incrby"), typ, off, val}
	case 7, 8:
		return []string{"OVERFLOW", g.pick("WRAP", "SAT", "FAIL", "sat", "fail", "FAIL", "bogus")}
	}
	return []string{g.pick("GET", "SET", "INCRBY", "OVERFLOW", "FOO")}
}
