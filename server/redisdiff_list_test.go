package server

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func init() { diffGroups = append(diffGroups, diffGroup{"lists", 20, diffLists}) }

// elem is a list element: a few values, so that LREM, LPOS and LINSERT
// find repeats.
func (g *diffGen) elem() string { return g.pick("a", "b", "c", "a", "1", "") }

// index is a list index or range bound: small, negative, huge or not a
// number.
func (g *diffGen) index() string {
	return g.pick("0", "1", "2", "-1", "-2", "3", "5", "-5", "-100", "100", "x", "9223372036854775807", "-9223372036854775808")
}

// diffLists generates the list commands, wrong arities and bad arguments
// included. Blocking commands run with a short timeout or on keys that
// hold elements only when the generator cannot know that: each server
// answers at once when a list is there, and after its timeout otherwise;
// BLPOP and friends against missing keys use timeouts of 1 ms.
func diffLists(g *diffGen) diffCmd {
	k := g.key()
	switch g.rng.IntN(28) {
	case 0, 1, 2:
		args := []string{g.pick("LPUSH", "RPUSH"), k}
		for range 1 + g.rng.IntN(4) {
			args = append(args, g.elem())
		}
		return diffCmdOf(exact, args...)
	case 3:
		return diffCmdOf(exact, g.pick("LPUSHX", "RPUSHX"), k, g.elem(), g.elem())
	case 4, 5:
		if g.rng.IntN(3) == 0 {
			return diffCmdOf(exact, g.pick("LPOP", "RPOP"), k, g.pick("0", "1", "2", "5", "-1", "x", "100"))
		}
		return diffCmdOf(exact, g.pick("LPOP", "RPOP"), k)
	case 6:
		return diffCmdOf(exact, "LLEN", k)
	case 7, 8:
		return diffCmdOf(exact, "LRANGE", k, g.index(), g.index())
	case 9:
		return diffCmdOf(exact, "LINDEX", k, g.index())
	case 10:
		return diffCmdOf(exact, "LSET", k, g.index(), g.elem())
	case 11:
		return diffCmdOf(exact, "LINSERT", k, g.pick("BEFORE", "AFTER", "after", "MIDDLE"), g.elem(), g.elem())
	case 12, 13:
		return diffCmdOf(exact, "LREM", k, g.pick("0", "1", "2", "-1", "-2", "x"), g.elem())
	case 14:
		return diffCmdOf(exact, "LTRIM", k, g.index(), g.index())
	case 15:
		args := []string{"LPOS", k, g.elem()}
		for range g.rng.IntN(3) {
			args = append(args, g.pick("RANK", "COUNT", "MAXLEN", "rank", "BOGUS"), g.pick("1", "2", "-1", "-2", "0", "x", "3"))
		}
		return diffCmdOf(exact, args...)
	case 16, 17:
		return diffCmdOf(exact, "LMOVE", k, g.key(), g.pick("LEFT", "RIGHT", "left", "UP"), g.pick("LEFT", "RIGHT"))
	case 18:
		return diffCmdOf(exact, "RPOPLPUSH", k, g.key())
	case 19:
		args := []string{"LMPOP", g.pick("1", "2", "0", "-1", "x", "5"), k, g.key(), g.pick("LEFT", "RIGHT", "MIDDLE")}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("COUNT", "count", "LIMIT"), g.pick("1", "2", "10", "0", "-1", "x"))
		}
		return diffCmdOf(exact, args...)
	case 20, 21:
		return diffCmdOf(exact, g.pick("BLPOP", "BRPOP"), k, g.key(), g.pick("0.001", "0.0001", "-1", "x", "1e-300", "inf", "-0.5", "1e300", "9223372036854775.808"))
	case 22:
		return diffCmdOf(exact, "BLMOVE", k, g.key(), g.pick("LEFT", "RIGHT", "SIDEWAYS"), g.pick("LEFT", "RIGHT"), g.pick("0.001", "-1", "x"))
	case 23:
		return diffCmdOf(exact, "BRPOPLPUSH", k, g.key(), g.pick("0.001", "-1", "nan", "x"))
	case 24:
		args := []string{"BLMPOP", g.pick("0.001", "0.001", "-1", "x"), g.pick("1", "2", "0", "x"), k, g.key(), g.pick("LEFT", "RIGHT", "MIDDLE")}
		if g.rng.IntN(2) == 0 {
			args = append(args, "COUNT", g.pick("1", "3", "0", "x"))
		}
		return diffCmdOf(exact, args...)
	case 25:
		// Wrong arities.
		return diffCmdOf(exact, g.pick("LPUSH", "LPOP", "LRANGE", "LINDEX", "LSET", "LINSERT", "LREM", "LTRIM", "LPOS", "LMOVE", "BLPOP", "BLMPOP", "LMPOP"), k)
	case 26:
		return diffCmdOf(exact, g.pick("LPOP", "RPOP", "LRANGE", "LTRIM"), k, "1", "2", "3")
	default:
		return diffCmdOf(exact, "LMOVE", k, k, g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT"))
	}
}

// TestRedisDiffLongLists grows two lists to hundreds of elements, so that
// LINSERT and LREM move either side of the list (list.go) and LTRIM,
// LPOS and LRANGE work on long ranges, and compares every reply and, every
// round, both lists whole with redis-server's.
func TestRedisDiffLongLists(t *testing.T) {
	redisSock := startRedis(t)
	s := startServer(t, nil)
	ours := dialDiff(t, "tcp", s.Addr().String(), 2)
	theirs := dialDiff(t, "unix", redisSock, 2)
	rng := rand.New(rand.NewPCG(11, 12))
	g := &diffGen{rng: rng, proto: 2}
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	key := func() string { return g.pick("L0", "L1") }
	elem := func() string { return g.pick("a", "b", "c", "d", strconv.Itoa(rng.IntN(50))) }
	longest := 0
	for round := range rounds {
		var cmds [][]string
		for range 64 {
			k := key()
			var args []string
			switch rng.IntN(12) {
			case 0, 1, 2, 3:
				args = []string{g.pick("LPUSH", "RPUSH"), k, elem(), elem(), elem()}
			case 4:
				args = []string{"LINSERT", k, g.pick("BEFORE", "AFTER"), elem(), elem()}
			case 5:
				args = []string{"LREM", k, strconv.Itoa(rng.IntN(7) - 3), elem()}
			case 6:
				args = []string{"LSET", k, strconv.Itoa(rng.IntN(400) - 200), elem()}
			case 7:
				args = []string{"LPOS", k, elem(), "RANK", g.pick("1", "2", "-1", "-3"), "COUNT", g.pick("0", "1", "5"), "MAXLEN", g.pick("0", "10", "100")}
			case 8:
				args = []string{g.pick("LPOP", "RPOP"), k, strconv.Itoa(rng.IntN(5))}
			case 9:
				args = []string{"LMOVE", k, key(), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT")}
			case 10:
				args = []string{"LRANGE", k, strconv.Itoa(rng.IntN(300) - 150), strconv.Itoa(rng.IntN(300) - 150)}
			default:
				if rng.IntN(4) == 0 {
					args = []string{"LTRIM", k, strconv.Itoa(rng.IntN(20) - 5), strconv.Itoa(rng.IntN(100) + 150)}
				} else {
					args = []string{"LINDEX", k, strconv.Itoa(rng.IntN(400) - 200)}
				}
			}
			cmds = append(cmds, args)
		}
		cmds = append(cmds, []string{"LRANGE", "L0", "0", "-1"}, []string{"LRANGE", "L1", "0", "-1"})
		got := diffRound(t, round, cmds, ours, theirs)
		longest = max(longest, len(got[len(cmds)-1].Array), len(got[len(cmds)-2].Array))
	}
	t.Logf("%d rounds; the longest list held %d elements", rounds, longest)
}
