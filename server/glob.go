package server

// globMatch reports whether s matches pattern with Redis' glob rules (the
// ones KEYS, SCAN MATCH and CONFIG GET use): '*' any run, '?' any byte,
// '[abc]', '[^abc]' and '[a-z]' classes (a reversed range is swapped, a
// class left open runs to the end of the pattern), and '\' quoting the
// next byte.
//
// Only '*' has variable width, so resuming after the most recent '*' on a
// mismatch is enough: the match runs in O(len(pattern)·len(s)) time and
// constant space, unlike the recursive matcher a hostile pattern such as
// "*a*a*a*a*b" would drive exponential.
func globMatch(pattern, s []byte, nocase bool) bool {
	px, sx := 0, 0
	starPx, starSx := -1, -1
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			if pattern[px] == '*' {
				for px < len(pattern) && pattern[px] == '*' {
					px++
				}
				if px == len(pattern) {
					return true
				}
				starPx, starSx = px, sx
				continue
			}
			if sx < len(s) {
				if width, ok := matchOne(pattern[px:], s[sx], nocase); ok {
					px += width
					sx++
					continue
				}
			}
		}
		if starPx < 0 || starSx >= len(s) {
			return false
		}
		starSx++
		px, sx = starPx, starSx
	}
	return true
}

// matchOne matches the single-byte pattern element at the start of p
// against c and returns how many pattern bytes the element spans.
func matchOne(p []byte, c byte, nocase bool) (int, bool) {
	switch p[0] {
	case '?':
		return 1, true
	case '\\':
		if len(p) >= 2 {
			return 2, equalFold(p[1], c, nocase)
		}
	case '[':
		return matchClass(p, c, nocase)
	}
	return 1, equalFold(p[0], c, nocase)
}

func matchClass(p []byte, c byte, nocase bool) (int, bool) {
	i := 1
	negate := i < len(p) && p[i] == '^'
	if negate {
		i++
	}
	matched := false
	for i < len(p) {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			matched = matched || equalFold(p[i+1], c, nocase)
			i += 2
		case p[i] == ']':
			return i + 1, matched != negate
		case i+2 < len(p) && p[i+1] == '-':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			x := c
			if nocase {
				lo, hi, x = toLower(lo), toLower(hi), toLower(x)
			}
			matched = matched || lo <= x && x <= hi
			i += 3
		default:
			matched = matched || equalFold(p[i], c, nocase)
			i++
		}
	}
	return i, matched != negate
}

func equalFold(a, b byte, nocase bool) bool {
	if nocase {
		return toLower(a) == toLower(b)
	}
	return a == b
}

// literalPrefix returns the part of pattern before its first special
// byte: every match starts with it, so a scan can seek straight to it.
func literalPrefix(pattern []byte) []byte {
	for i, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return pattern[:i]
		}
	}
	return pattern
}
