package server

func init() {
	diffGroups = append(diffGroups, diffGroup{"tx", 4, diffTx})
}

// diffTx generates transactions: MULTI, commands of the other groups
// (queued, then compared in EXEC's reply each under its own norm), now
// and then a command refused at queue time (which aborts the EXEC), a
// nested MULTI or a WATCH inside MULTI (refused without aborting), then
// EXEC, DISCARD or an EXEC with a wrong arity. Outside MULTI: WATCH of
// keys that the next commands may change (this connection's writes count
// as changes too), UNWATCH, and EXEC or DISCARD without MULTI.
func diffTx(g *diffGen) diffCmd {
	switch g.rng.IntN(6) {
	case 0:
		return diffCmdOf(exact, g.pick("EXEC", "DISCARD", "UNWATCH", "WATCH"))
	case 1:
		return diffCmdOf(exact, "WATCH", g.key(), g.key())
	}
	var seq []diffCmd
	var elems []norm
	for range g.rng.IntN(6) {
		switch g.rng.IntN(12) {
		case 0:
			seq = append(seq, diffCmdOf(exact, g.pick("MULTI", "WATCH"), g.key()))
		case 1:
			seq = append(seq, diffCmdOf(exact, "NOSUCHCOMMAND", g.key()))
		case 2:
			seq = append(seq, diffCmdOf(exact, g.pick("MULTI", "UNWATCH", "PING")))
			if seq[len(seq)-1].args[0] != "MULTI" {
				elems = append(elems, exact)
			}
		default:
			// A group may itself start a sequence: all of it is queued.
			cmds := append([]diffCmd{g.fromGroups("tx")}, g.pending...)
			g.pending = nil
			for _, c := range cmds {
				seq = append(seq, diffCmdOf(exact, c.args...))
				elems = append(elems, c.norm)
			}
		}
	}
	end := diffCmd{args: []string{"EXEC"}, elems: elems}
	switch g.rng.IntN(8) {
	case 0:
		end = diffCmdOf(exact, "DISCARD")
	case 1:
		end = diffCmdOf(exact, "EXEC", "now")
	}
	g.pending = append(append(g.pending, seq...), end)
	return diffCmdOf(exact, "MULTI")
}
