package server

func init() { diffGroups = append(diffGroups, diffGroup{"sets", 16, diffSets}) }

// diffSets generates the set commands.
func diffSets(g *diffGen) diffCmd {
	k := g.key()
	switch g.rng.IntN(16) {
	case 0, 1, 2:
		args := []string{"SADD", k}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.member())
		}
		return diffCmdOf(exact, args...)
	case 3:
		return diffCmdOf(exact, "SREM", k, g.member(), g.member())
	case 4:
		return diffCmdOf(exact, g.pick("SISMEMBER", "SCARD", "SMISMEMBER"), k, g.member())
	case 5:
		return diffCmdOf(exact, "SMISMEMBER", k, g.member(), g.member())
	case 6:
		return diffCmdOf(unordered, g.pick("SMEMBERS", "SCARD"), k)
	case 7:
		// Only pops that take every member or none are deterministic.
		return diffCmdOf(unordered, "SPOP", k, g.pick("100", "0", "-1", "x", "1 2"))
	case 8:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(unordered, "SRANDMEMBER", k, "100")
		}
		return diffCmdOf(shape, "SRANDMEMBER", k, g.count())
	case 9:
		return diffCmdOf(exact, "SMOVE", k, g.key(), g.member())
	case 10, 11:
		args := []string{g.pick("SINTER", "SUNION", "SDIFF"), k, g.key()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.key())
		}
		return diffCmdOf(unordered, args...)
	case 12:
		return diffCmdOf(exact, g.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), k, g.key(), g.key())
	case 13:
		args := []string{"SINTERCARD", g.pick("1", "2", "0", "x", "5"), k, g.key()}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("LIMIT", "LIMIT", "LIMITS"), g.pick("0", "1", "-1", "x"))
		}
		return diffCmdOf(exact, args...)
	case 14:
		return diffCmdOf(scanKeys, "SSCAN", k, "0", g.pick("COUNT", "MATCH"), g.pick("1000", "m*", "x"))
	default:
		return diffCmdOf(exact, g.pick("SADD", "SREM", "SISMEMBER", "SMOVE", "SINTERCARD", "SMEMBERS"), k, g.member(), g.member(), g.member())
	}
}
