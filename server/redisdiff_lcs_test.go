package server

import "strings"

func init() { diffGroups = append(diffGroups, diffGroup{"lcs", 2, diffLCS}) }

// diffLCS generates LCS over keys of its own ("lcs0" to "lcs2"), which
// hold strings over a four-letter alphabet, so that common subsequences
// are long, ties between equally long ones frequent and the ranges of
// IDX many; and over the shared keys, for WRONGTYPE and absent keys.
func diffLCS(g *diffGen) diffCmd {
	key := func() string {
		if g.rng.IntN(6) == 0 {
			return g.key()
		}
		return g.pick("lcs0", "lcs1", "lcs2")
	}
	if g.rng.IntN(4) == 0 {
		var b strings.Builder
		for range g.rng.IntN(60) {
			b.WriteByte("ACGT"[g.rng.IntN(4)])
		}
		return diffCmdOf(exact, "SET", g.pick("lcs0", "lcs1", "lcs2"), b.String())
	}
	args := []string{"LCS", key(), key()}
	for range g.rng.IntN(4) {
		switch g.rng.IntN(6) {
		case 0:
			args = append(args, g.pick("LEN", "len"))
		case 1, 2:
			args = append(args, g.pick("IDX", "idx"))
		case 3:
			args = append(args, g.pick("WITHMATCHLEN", "withmatchlen"))
		case 4:
			args = append(args, "MINMATCHLEN", g.pick("0", "1", "2", "3", "5", "-1", "x", "99999999999999999999"))
		default:
			args = append(args, g.pick("MINMATCHLEN", "FOO"))
		}
	}
	return diffCmdOf(exact, args...)
}
