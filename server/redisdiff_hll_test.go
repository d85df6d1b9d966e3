package server

import "strconv"

func init() { diffGroups = append(diffGroups, diffGroup{"hyperloglog", 10, diffHLL}) }

// diffHLL generates PFADD, PFCOUNT, PFMERGE and PFDEBUG over keys of their own
// ("hll0" to "hll3") and the shared keys (strings that are not HLLs, and
// other types), compares the HLL bytes with GET, and damages values with
// SETRANGE and APPEND. After a damaged value meets a PF command the key
// is deleted: Redis keeps the part of a PFADD done before it found the
// damage, lsmgo nothing (doc/server.md).
func diffHLL(g *diffGen) diffCmd {
	key := g.pick("hll0", "hll1", "hll2", "hll3")
	if g.rng.IntN(10) == 0 {
		key = g.key()
	}
	switch g.rng.IntN(21) {
	case 0, 1, 2, 3, 4, 5, 6:
		// Universes of varied size, so that keys stay sparse, reach the
		// sparse limit, or turn dense.
		universe := []int{30, 300, 3000, 30000}[g.rng.IntN(4)]
		args := []string{"PFADD", key}
		for range g.rng.IntN(1 + g.rng.IntN(60)) {
			args = append(args, "e"+strconv.Itoa(g.rng.IntN(universe)))
		}
		return diffCmdOf(exact, args...)
	case 7, 8, 9:
		return diffCmdOf(exact, "PFCOUNT", key)
	case 10, 11:
		args := []string{"PFCOUNT", key}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.pick("hll0", "hll1", "hll2", "hll3", "hll-missing", g.key()))
		}
		return diffCmdOf(exact, args...)
	case 12, 13:
		args := []string{"PFMERGE", key}
		for range g.rng.IntN(3) {
			args = append(args, g.pick("hll0", "hll1", "hll2", "hll3", "hll-missing", g.key()))
		}
		return diffCmdOf(exact, args...)
	case 14, 15, 16:
		return diffCmdOf(exact, "GET", key)
	case 17:
		return diffCmdOf(exact, "CONFIG", "SET", "hll-sparse-max-bytes", g.pick("3000", "3000", "0", "40", "300", "1000"))
	case 18:
		damage := diffCmdOf(exact, "SETRANGE", key, strconv.Itoa(g.rng.IntN(40)), g.pick("\x00", "\x7f", "\xff", "\x80", "\x40", "\x02", "HYLX"))
		if g.rng.IntN(3) == 0 {
			damage = diffCmdOf(exact, "APPEND", key, g.pick("\x80", "\x00", "\x7f\xff"))
		}
		g.pending = append(g.pending,
			diffCmdOf(exact, g.pick("PFADD", "PFCOUNT", "PFMERGE"), key, "a", "b", "c", "d", "e", "f"),
			diffCmdOf(exact, "DEL", key))
		return damage
	case 19:
		args := []string{"PFDEBUG", g.pick("ENCODING", "DECODE", "TODENSE", "GETREG", "encoding", "decode", "FOO"), key}
		if g.rng.IntN(8) == 0 {
			args = append(args, "extra")
		}
		return diffCmdOf(exact, args...)
	default:
		return diffCmdOf(exact, "DEL", key)
	}
}
