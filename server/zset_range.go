package server

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/lsmgo-dev/lsmgo"
)

// The score and range arguments of the sorted set commands, parsed as
// Redis parses them, and the walks of a sorted set's score index that
// those ranges select.

// parseScore parses a score or weight as Redis' getDoubleFromObject does
// with C's strtod: no leading space, nothing after the number, "inf",
// "+inf", "-inf" and "infinity" in any case, hexadecimal floats, but not
// NaN, and neither an overflow to infinity nor an underflow to zero.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpaceByte(b[0]) {
		return 0, false
	}
	f, ok := strtod(b)
	if !ok || math.IsNaN(f) {
		return 0, false
	}
	if math.IsInf(f, 0) && !isInfText(b) || f == 0 && !zeroMantissa(b) {
		return 0, false
	}
	return f, true
}

// strtod parses the whole of b as C's strtod would, less its treatment of
// range errors, which the callers decide: an overflow is ±Inf and an
// underflow 0 or a subnormal, each with ok true.
func strtod(b []byte) (float64, bool) {
	s := string(b)
	if strings.IndexByte(s, '_') >= 0 {
		return 0, false // Go allows digit separators; C does not.
	}
	if isHexFloat(s) && !strings.ContainsAny(s, "pP") {
		s += "p0" // C's hexadecimal floats may omit the exponent; Go's may not.
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func isHexFloat(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

// isInfText reports whether b spells infinity rather than overflowing to
// it.
func isInfText(b []byte) bool {
	s := strings.ToLower(strings.TrimLeft(string(b), "+-"))
	return s == "inf" || s == "infinity"
}

// zeroMantissa reports whether the number in b has only zero digits
// before its exponent, so that 0 is its value and not an underflow.
func zeroMantissa(b []byte) bool {
	s := strings.TrimLeft(string(b), "+-")
	hex := isHexFloat(s)
	if hex {
		s = s[2:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case hex && (c == 'p' || c == 'P'), !hex && (c == 'e' || c == 'E'):
			return true
		case c >= '1' && c <= '9', hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return false
		}
	}
	return true
}

// scoreRange is a parsed min and max of ZRANGEBYSCORE and friends.
type scoreRange struct {
	min, max     float64
	minEx, maxEx bool
}

// parseScoreBound parses one end of a score range as Redis'
// zslParseRange: an optional '(' for an exclusive bound, then what C's
// strtod reads up to the first NUL byte, which unlike parseScore allows
// leading spaces, the empty string (0) and values out of range (±inf, 0).
func parseScoreBound(b []byte) (f float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		b, ex = b[1:], true
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, ex, true
	}
	b = bytes.TrimLeft(b, " \t\n\v\f\r")
	f, ok = strtod(b)
	return f, ex, ok && len(b) > 0 && !math.IsNaN(f)
}

func parseScoreRange(min, max []byte) (r scoreRange, ok bool) {
	var okMin, okMax bool
	r.min, r.minEx, okMin = parseScoreBound(min)
	r.max, r.maxEx, okMax = parseScoreBound(max)
	return r, okMin && okMax
}

// empty reports the ranges that hold nothing whatever the set holds.
func (r scoreRange) empty() bool {
	return r.min > r.max || r.min == r.max && (r.minEx || r.maxEx)
}

// bounds returns the range as bounds of the score index (newZIter).
func (r scoreRange) bounds() (lower, upper []byte) {
	lower = encodeScore(nil, r.min)
	if r.minEx {
		lower = prefixEnd(lower)
	}
	upper = encodeScore(nil, r.max)
	if !r.maxEx {
		upper = prefixEnd(upper)
	}
	return lower, upper
}

// lexBound is one end of a ZRANGEBYLEX range: "-" (inf < 0) or "+"
// (inf > 0), which Redis marks exclusive, or a member, '[' inclusive or
// '(' exclusive.
type lexBound struct {
	val []byte
	inf int
	ex  bool
}

// parseLexBound parses one end of a lex range as Redis'
// zslParseLexRangeItem, which reads "-" and "+" up to a NUL byte.
func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return lexBound{}, false
		}
		if b[0] == '+' {
			return lexBound{inf: 1, ex: true}, true
		}
		return lexBound{inf: -1, ex: true}, true
	case '(':
		return lexBound{val: b[1:], ex: true}, true
	case '[':
		return lexBound{val: b[1:]}, true
	}
	return lexBound{}, false
}

// cmp compares member with the bound's value as Redis' sdscmplex does.
func (b lexBound) cmp(member []byte) int {
	if b.inf != 0 {
		return -b.inf
	}
	return bytes.Compare(member, b.val)
}

type lexRange struct{ min, max lexBound }

func parseLexRange(min, max []byte) (r lexRange, ok bool) {
	var okMin, okMax bool
	r.min, okMin = parseLexBound(min)
	r.max, okMax = parseLexBound(max)
	return r, okMin && okMax
}

func (r lexRange) gteMin(member []byte) bool {
	c := r.min.cmp(member)
	return c > 0 || c == 0 && !r.min.ex
}

func (r lexRange) lteMax(member []byte) bool {
	c := r.max.cmp(member)
	return c < 0 || c == 0 && !r.max.ex
}

// empty reports the ranges that hold nothing whatever the set holds.
func (r lexRange) empty() bool {
	var c int
	switch {
	case r.min.inf != 0 && r.min.inf == r.max.inf:
		c = 0
	case r.min.inf < 0 || r.max.inf > 0:
		c = -1
	case r.min.inf > 0 || r.max.inf < 0:
		c = 1
	default:
		c = bytes.Compare(r.min.val, r.max.val)
	}
	return c > 0 || c == 0 && (r.min.ex || r.max.ex)
}

// zmember is one member of a sorted set with its score.
type zmember struct {
	member []byte
	score  float64
}

// scoreWalk calls fn with the members of m at key whose scores are in r,
// ascending or, when reverse, descending, read through rd.
func (ks *keyspace) scoreWalk(rd lsmgo.Reader, key []byte, m collMeta, r scoreRange, reverse bool, fn func(score float64, member []byte) bool) error {
	if r.empty() {
		return nil
	}
	lower, upper := r.bounds()
	return ks.zwalk(rd, key, m, lower, upper, reverse, fn)
}

// lexWalk calls fn with the members of m at key in r, forward or
// reversed, as Redis' compact (listpack) encoding finds them: the range
// is empty unless the last member in score order is ≥ min and the first
// ≤ max; otherwise the walk skips members until one is ≥ min (reversed:
// ≤ max) and goes on while they are ≤ max (≥ min). When every score is
// equal — the case Redis defines lex ranges for — that is exactly the
// members in the range, and the walk seeks straight to the first of them;
// with mixed scores the result is Redis' listpack answer, read by a walk
// from the set's end (Redis' skiplist encoding answers differently, and
// the order is undefined anyway).
func (ks *keyspace) lexWalk(rd lsmgo.Reader, key []byte, m collMeta, r lexRange, reverse bool, fn func(score float64, member []byte) bool) error {
	if r.empty() {
		return nil
	}
	first, last, err := ks.zends(rd, key, m)
	if err != nil {
		return err
	}
	if !r.gteMin(last.member) || !r.lteMax(first.member) {
		return nil
	}
	var lower, upper []byte
	if first.score == last.score {
		lower, upper = r.bounds(encodeScore(nil, first.score))
	}
	started := false
	return ks.zwalk(rd, key, m, lower, upper, reverse, func(score float64, member []byte) bool {
		in, out := r.gteMin(member), r.lteMax(member)
		if reverse {
			in, out = out, in
		}
		if !started {
			if !in {
				return true
			}
			if !out {
				return false
			}
			started = true
		} else if !out {
			return false
		}
		return fn(score, member)
	})
}

// bounds returns the range as bounds of the score index of a set whose
// every member has the score encoded in enc.
func (r lexRange) bounds(enc []byte) (lower, upper []byte) {
	lower = bytes.Clone(enc)
	if r.min.inf == 0 {
		lower = append(lower, r.min.val...)
		if r.min.ex {
			lower = append(lower, 0)
		}
	}
	upper = prefixEnd(enc)
	if r.max.inf == 0 {
		upper = append(bytes.Clone(enc), r.max.val...)
		if !r.max.ex {
			upper = append(upper, 0)
		}
	}
	return lower, upper
}

// zends reads the first and last members of m at key in score order.
func (ks *keyspace) zends(r lsmgo.Reader, key []byte, m collMeta) (first, last zmember, err error) {
	for _, reverse := range []bool{false, true} {
		err = ks.zwalk(r, key, m, nil, nil, reverse, func(score float64, member []byte) bool {
			z := zmember{member: bytes.Clone(member), score: score}
			if reverse {
				last = z
			} else {
				first = z
			}
			return false
		})
		if err != nil {
			return first, last, err
		}
	}
	return first, last, nil
}

// rankWalk returns the members of m at key at ranks start to stop
// (0 ≤ start ≤ stop < m.count) in ascending order, or descending when
// reverse. It walks from whichever end of the set is nearer the range,
// so it costs the range plus min(start, m.count-1-stop) entries.
func (ks *keyspace) rankWalk(r lsmgo.Reader, key []byte, m collMeta, start, stop int64, reverse bool) ([]zmember, error) {
	fromEnd := m.count-1-stop < start
	skip := start
	if fromEnd {
		skip = m.count - 1 - stop
	}
	items := make([]zmember, 0, min(stop-start+1, 1024))
	err := ks.zwalk(r, key, m, nil, nil, fromEnd, func(score float64, member []byte) bool {
		if skip > 0 {
			skip--
			return true
		}
		items = append(items, zmember{member: bytes.Clone(member), score: score})
		return int64(len(items)) < stop-start+1
	})
	if err != nil {
		return nil, err
	}
	if fromEnd != reverse {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	return items, nil
}
