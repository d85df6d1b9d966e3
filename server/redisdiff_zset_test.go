package server

import "strconv"

func init() { diffGroups = append(diffGroups, diffGroup{"sorted sets", 25, diffZSets}) }

// score is a score argument: mostly numbers that are exact in binary and
// short, which Redis 7.0 (Debian's, printing "%.17g") and 7.2 (printing
// the shortest form) print alike, with duplicates, negatives and
// infinities; now and then one that Redis refuses or that only its strtod
// reads.
func (g *diffGen) score() string {
	if g.rng.IntN(12) == 0 {
		return g.pick("x", "nan", "", " 1", "1 ", "(1", "1e400", "1e-400", "0x10", "-0", "+inf", "INFINITY", "1_0", "0x1p-2")
	}
	return g.pick("0", "1", "1", "2", "2", "3", "-1", "-2.5", "1.5", "0.25", "10", "inf", "-inf", "1e3")
}

// zmember overlaps member, so that sets and sorted sets share members in
// ZUNION and friends.
func (g *diffGen) zmember() string { return g.pick("a", "b", "c", "d", "m0", "m1", "1", "10") }

func (g *diffGen) scoreBound() string {
	return g.pick("-inf", "+inf", "inf", "0", "(0", "1", "(1", "2", "(2", "1.5", "(-2.5", "10", "-1", "(inf", "x", "(", "", " 2", "((1", "1e400")
}

func (g *diffGen) lexBound() string {
	return g.pick("-", "+", "[a", "(a", "[b", "(b", "[c", "(d", "[m", "[1", "(10", "a", "[", "(", "+x", "")
}

// withScores adds WITHSCORES now and then; norm is how a reply with
// members and scores compares when its order is Redis' choice.
func (g *diffGen) withScores(args []string) ([]string, norm) {
	if g.rng.IntN(2) == 0 {
		return args, unordered
	}
	if g.proto == 2 {
		return append(args, "WITHSCORES"), unorderedPairs
	}
	return append(args, "WITHSCORES"), unordered
}

// diffZSets generates the sorted set commands.
func diffZSets(g *diffGen) diffCmd {
	k := g.key()
	switch g.rng.IntN(26) {
	case 0, 1, 2, 3:
		args := []string{"ZADD", k}
		for g.rng.IntN(3) == 0 {
			args = append(args, g.pick("NX", "XX", "GT", "LT", "CH", "INCR", "ch"))
		}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.score(), g.zmember())
		}
		if g.rng.IntN(20) == 0 {
			args = args[:len(args)-1]
		}
		return diffCmdOf(exact, args...)
	case 4:
		return diffCmdOf(exact, "ZINCRBY", k, g.score(), g.zmember())
	case 5:
		return diffCmdOf(exact, "ZREM", k, g.zmember(), g.zmember())
	case 6:
		return diffCmdOf(exact, g.pick("ZSCORE", "ZRANK", "ZREVRANK"), k, g.zmember())
	case 7:
		return diffCmdOf(exact, g.pick("ZMSCORE", "ZCARD"), k, g.zmember(), g.zmember())
	case 8:
		return diffCmdOf(exact, "ZCARD", k)
	case 9:
		return diffCmdOf(exact, "ZCOUNT", k, g.scoreBound(), g.scoreBound())
	case 10:
		return diffCmdOf(exact, "ZLEXCOUNT", k, g.lexBound(), g.lexBound())
	case 11, 12:
		// ZRANGE in all its forms.
		args := []string{"ZRANGE", k}
		var opts []string
		switch g.rng.IntN(3) {
		case 0:
			args = append(args, g.index(), g.index())
		case 1:
			args = append(args, g.scoreBound(), g.scoreBound())
			opts = append(opts, "BYSCORE")
		default:
			args = append(args, g.lexBound(), g.lexBound())
			opts = append(opts, "BYLEX")
		}
		if g.rng.IntN(3) == 0 {
			opts = append(opts, "REV")
		}
		if g.rng.IntN(3) == 0 {
			opts = append(opts, "LIMIT", g.pick("0", "1", "-1", "2", "x"), g.pick("1", "2", "-1", "0", "100"))
		}
		if g.rng.IntN(3) == 0 {
			opts = append(opts, g.pick("WITHSCORES", "withscores", "BYSCORE", "REV", "BYLEX"))
		}
		g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
		return diffCmdOf(exact, append(args, opts...)...)
	case 13:
		args := []string{g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), k, g.scoreBound(), g.scoreBound()}
		if g.rng.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, g.pick("LIMIT", "REV"), g.pick("0", "1", "-1"), g.pick("1", "2", "-1"))
		}
		return diffCmdOf(exact, args...)
	case 14:
		args := []string{g.pick("ZRANGEBYLEX", "ZREVRANGEBYLEX"), k, g.lexBound(), g.lexBound()}
		if g.rng.IntN(3) == 0 {
			args = append(args, g.pick("LIMIT", "WITHSCORES"), g.pick("0", "1", "-1"), g.pick("1", "2", "-1"))
		}
		return diffCmdOf(exact, args...)
	case 15:
		args := []string{g.pick("ZREVRANGE", "ZRANGE"), k, g.index(), g.index()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("WITHSCORES", "LIMIT"))
		}
		return diffCmdOf(exact, args...)
	case 16:
		args := []string{"ZRANGESTORE", g.key(), k, g.index(), g.index()}
		switch g.rng.IntN(3) {
		case 0:
			args = []string{"ZRANGESTORE", g.key(), k, g.scoreBound(), g.scoreBound(), "BYSCORE"}
		case 1:
			args = []string{"ZRANGESTORE", g.key(), k, g.lexBound(), g.lexBound(), "BYLEX"}
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, g.pick("REV", "LIMIT", "WITHSCORES"), g.pick("0", "1"), g.pick("1", "-1"))
		}
		return diffCmdOf(exact, args...)
	case 17:
		args := []string{g.pick("ZPOPMIN", "ZPOPMAX"), k}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("0", "1", "2", "10", "-1", "x"))
		}
		return diffCmdOf(exact, args...)
	case 18:
		args := []string{"ZMPOP", g.pick("1", "2", "0", "3", "x"), k, g.key(), g.pick("MIN", "MAX", "min", "AVG")}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("COUNT", "COUNT", "LIMIT"), g.pick("1", "2", "10", "0", "-1", "x"))
		}
		return diffCmdOf(exact, args...)
	case 19:
		switch g.rng.IntN(3) {
		case 0:
			return diffCmdOf(exact, "ZREMRANGEBYRANK", k, g.index(), g.index())
		case 1:
			return diffCmdOf(exact, "ZREMRANGEBYSCORE", k, g.scoreBound(), g.scoreBound())
		}
		return diffCmdOf(exact, "ZREMRANGEBYLEX", k, g.lexBound(), g.lexBound())
	case 20, 21:
		store := g.rng.IntN(2) == 0
		op := g.pick("ZUNION", "ZINTER", "ZDIFF")
		var args []string
		if store {
			args = []string{op + "STORE", g.key()}
		} else {
			args = []string{op}
		}
		n := 1 + g.rng.IntN(3)
		numkeys := strconv.Itoa(n)
		if g.rng.IntN(10) == 0 {
			numkeys = g.pick("0", "x", "9", "-1")
		}
		args = append(args, numkeys)
		for range n {
			args = append(args, g.key())
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "WEIGHTS")
			for range n + g.rng.IntN(2) - g.rng.IntN(2) {
				args = append(args, g.pick("1", "2", "0", "-1", "0.5", "inf", "-inf", "x"))
			}
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "AGGREGATE", g.pick("SUM", "MIN", "MAX", "max", "AVG"))
		}
		if !store && g.rng.IntN(2) == 0 || g.rng.IntN(20) == 0 {
			args = append(args, "WITHSCORES")
		}
		return diffCmdOf(exact, args...)
	case 22:
		args := []string{"ZINTERCARD", g.pick("1", "2", "2", "0", "x", "5"), k, g.key()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("LIMIT", "LIMIT", "LIMITS"), g.pick("0", "1", "-1", "x"))
		}
		return diffCmdOf(exact, args...)
	case 23:
		switch g.rng.IntN(4) {
		case 0:
			args, n := g.withScores([]string{"ZRANDMEMBER", k, g.pick("100", "10")})
			return diffCmdOf(n, args...)
		case 1:
			return diffCmdOf(shape, "ZRANDMEMBER", k)
		case 2:
			return diffCmdOf(exact, "ZRANDMEMBER", k, g.pick("0", "x", "1 2", "-9223372036854775808"))
		}
		args := []string{"ZRANDMEMBER", k, g.count()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("WITHSCORES", "WITHSCORE"))
		}
		return diffCmdOf(shape, args...)
	case 24:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(scanAll, "ZSCAN", k, "0", g.pick("COUNT", "MATCH"), g.pick("1000", "m*", "x"))
		}
		// The blocking pops, with timeouts short enough that a miss
		// answers at once on both servers.
		timeout := g.pick("0.001", "0.001", "0.001", "x", "-1", "0.001x")
		if g.rng.IntN(3) == 0 {
			return diffCmdOf(exact, "BZMPOP", timeout, g.pick("1", "2", "0"), k, g.key(), g.pick("MIN", "MAX", "AVG"), "COUNT", g.pick("1", "3", "0"))
		}
		return diffCmdOf(exact, g.pick("BZPOPMIN", "BZPOPMAX"), k, g.key(), timeout)
	default:
		// Other types' commands on the sorted sets' keys, and the
		// sorted set commands with too few arguments.
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(unordered, g.pick("SADD", "HSET", "SINTERCARD", "SUNION", "SET"), k, g.zmember(), g.zmember())
		}
		return diffCmdOf(exact, g.pick("ZADD", "ZINCRBY", "ZRANGE", "ZRANGESTORE", "ZCOUNT", "ZUNIONSTORE", "ZMPOP", "ZREMRANGEBYLEX", "ZRANK"), k, g.zmember())
	}
}
