package server

func init() { diffGroups = append(diffGroups, diffGroup{"hashes", 27, diffHashes}) }

// diffHashes generates the hash commands, wrong arities and bad arguments
// included.
func diffHashes(g *diffGen) diffCmd {
	k, f, v := g.key(), g.field(), g.value()
	switch g.rng.IntN(27) {
	case 0, 1, 2, 3:
		args := []string{"HSET", k}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.field(), g.value())
		}
		return diffCmdOf(exact, args...)
	case 4:
		return diffCmdOf(exact, "HMSET", k, f, v, g.field(), g.value())
	case 5:
		return diffCmdOf(exact, "HSETNX", k, f, v)
	case 6, 7:
		return diffCmdOf(exact, "HGET", k, f)
	case 8:
		return diffCmdOf(exact, "HMGET", k, f, g.field(), f)
	case 9, 10:
		return diffCmdOf(exact, "HDEL", k, f, g.field())
	case 11:
		return diffCmdOf(exact, "HEXISTS", k, f)
	case 12:
		return diffCmdOf(exact, "HLEN", k)
	case 13:
		return diffCmdOf(exact, "HSTRLEN", k, f)
	case 14:
		return diffCmdOf(unorderedPairs, "HGETALL", k)
	case 15:
		return diffCmdOf(unordered, g.pick("HKEYS", "HVALS"), k)
	case 16:
		return diffCmdOf(exact, "HINCRBY", k, f, g.value())
	case 17:
		return diffCmdOf(exact, "HINCRBYFLOAT", k, f, g.value())
	case 18:
		return diffCmdOf(scanAll, "HSCAN", k, "0", "COUNT", "1000")
	case 19:
		return diffCmdOf(scanAll, "HSCAN", k, "0", "MATCH", g.pick("f1", "f[0-2]", "*", "x*"), "COUNT", "1000")
	case 20:
		return diffCmdOf(shape, "HRANDFIELD", k)
	case 21:
		// A count that covers the whole hash returns all of it; RESP3
		// pairs each field with its value in an array.
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(unordered, "HRANDFIELD", k, "100")
		}
		n := unorderedPairs
		if g.proto == 3 {
			n = unordered
		}
		return diffCmdOf(n, "HRANDFIELD", k, "100", "WITHVALUES")
	case 22:
		args := []string{"HRANDFIELD", k, g.count()}
		if g.rng.IntN(2) == 0 {
			args = append(args, "WITHVALUES")
		}
		return diffCmdOf(shape, args...)
	case 23:
		return diffCmdOf(exact, g.pick("HSET", "HMSET"), k, f, v, f)
	case 24:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(exact, g.pick("HLEN", "HGETALL", "HKEYS", "HVALS"), k, f)
		}
		return diffCmdOf(exact, g.pick("HGET", "HSETNX", "HINCRBY", "HDEL", "HMGET", "HEXISTS", "HSTRLEN", "HSCAN"), k)
	case 25:
		args := []string{"HSCAN", k, g.pick("x", "0"), g.pick("COUNT", "MATCH", "NOVALUES")}
		if g.rng.IntN(2) == 0 {
			args = append(args, g.pick("0", "x", "2", "-5"))
		}
		return diffCmdOf(scanAll, args...)
	default:
		return diffCmdOf(exact, "HRANDFIELD", k, "1", g.pick("WITHVALUE", "WITHVALUES x"))
	}
}
