package server

import "errors"

func init() {
	register(spec{name: "lcs", arity: -3, flags: flagReadonly, firstKey: 1, lastKey: 2, step: 1, group: "string", since: "7.0.0",
		summary: "Finds the longest common substring.", run: cmdLCS})
}

var (
	errLCSNotString = redisError("ERR The specified keys must contain string values")
	errLCSLenAndIdx = redisError("ERR If you want both the length and indexes, please just use IDX.")
	errLCSTooLong   = redisError("ERR String too long for LCS")
	errLCSTooBig    = redisError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

// cmdLCS implements LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n]
// [WITHMATCHLEN]: the longest common subsequence of two strings (an
// absent key is the empty string), its length, or the matching ranges.
// The table and its walk back from the end are Redis' own, so that among
// several subsequences of the same length both servers pick the same one
// and report the same ranges, in the same order (last first).
func cmdLCS(c *conn, _ *command, args [][]byte) error {
	a, err := c.lcsOperand(args[1])
	if err != nil {
		return err
	}
	b, err := c.lcsOperand(args[2])
	if err != nil {
		return err
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(args); j++ {
		switch opt := args[j]; {
		case is(opt, "IDX"):
			getIdx = true
		case is(opt, "LEN"):
			getLen = true
		case is(opt, "WITHMATCHLEN"):
			withMatchLen = true
		case is(opt, "MINMATCHLEN") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok {
				return redisError(msgNotInteger)
			}
			minMatchLen = max(n, 0)
			j++
		default:
			return redisError(msgSyntax)
		}
	}
	if getIdx && getLen {
		return errLCSLenAndIdx
	}
	// The table holds a uint32 per pair of prefixes; Redis bounds it by
	// proto-max-bulk-len, which keeps one LCS from taking the memory of
	// the whole server.
	if len(a) >= 1<<32-2 || len(b) >= 1<<32-2 {
		return errLCSTooLong
	}
	if cells := (int64(len(a)) + 1) * (int64(len(b)) + 1); cells > c.s.config().ProtoMaxBulkLen/4 {
		return errLCSTooBig
	}
	t := lcsTable(a, b)
	w := len(b) + 1
	at := func(i, j int) uint32 { return t[i*w+j] }
	total := at(len(a), len(b))
	if getLen {
		c.wr.Int(int64(total))
		return nil
	}

	result := make([]byte, total)
	var matches []lcsMatch
	idx := int(total)
	const unset = -1
	aStart, aEnd, bStart, bEnd := unset, 0, 0, 0
	for i, j := len(a), len(b); i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case aStart == unset:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart--
				bStart--
			default:
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			emit = aStart != unset
		}
		if emit {
			if m := (lcsMatch{aStart, aEnd, bStart, bEnd}); m.len() >= minMatchLen {
				matches = append(matches, m)
			}
			aStart = unset
		}
	}
	if !getIdx {
		c.wr.Bulk(result)
		return nil
	}
	c.wr.MapHeader(2)
	c.wr.BulkString("matches")
	c.wr.ArrayHeader(len(matches))
	for _, m := range matches {
		if withMatchLen {
			c.wr.ArrayHeader(3)
		} else {
			c.wr.ArrayHeader(2)
		}
		c.wr.ArrayHeader(2)
		c.wr.Int(int64(m.aStart))
		c.wr.Int(int64(m.aEnd))
		c.wr.ArrayHeader(2)
		c.wr.Int(int64(m.bStart))
		c.wr.Int(int64(m.bEnd))
		if withMatchLen {
			c.wr.Int(m.len())
		}
	}
	c.wr.BulkString("len")
	c.wr.Int(int64(total))
	return nil
}

// lcsOperand reads one of LCS's strings: an absent key is the empty
// string, and a key of another type gets LCS's own error.
func (c *conn) lcsOperand(key []byte) ([]byte, error) {
	v, exists, err := c.get(key)
	c.countLookup(key, exists)
	if errors.Is(err, errWrongType) {
		return nil, errLCSNotString
	}
	return v.val, err
}

// lcsTable returns the dynamic programming table of the longest common
// subsequence, row-major with len(b)+1 columns: cell (i, j) is the
// length of the LCS of a[:i] and b[:j].
func lcsTable(a, b []byte) []uint32 {
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		row, prev := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	return t
}

// lcsMatch is one range of LCS IDX: a[aStart:aEnd+1] equals
// b[bStart:bEnd+1].
type lcsMatch struct{ aStart, aEnd, bStart, bEnd int }

func (m lcsMatch) len() int64 { return int64(m.aEnd - m.aStart + 1) }
