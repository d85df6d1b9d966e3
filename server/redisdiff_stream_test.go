package server

import "strconv"

func init() { diffGroups = append(diffGroups, diffGroup{"streams", 14, diffStreams}) }

// streamKey is a stream key of the group's own ("s0" to "s2"), or now and
// then a shared key that may hold another type.
func streamKey(g *diffGen) string {
	if g.rng.IntN(8) == 0 {
		return g.key()
	}
	return "s" + strconv.Itoa(g.rng.IntN(3))
}

// streamIDArg is an entry id from a small space, so that adds collide
// with the top item, ranges hit and miss, and deleted ids come back; now
// and then an edge or a malformed one.
func streamIDArg(g *diffGen) string {
	switch g.rng.IntN(12) {
	case 0:
		return g.pick("-", "+", "0", "0-0", "x", "1-x", "18446744073709551615-18446744073709551615", "18446744073709551616", "1--1", " 5", "+5", "-0")
	case 1:
		return "(" + strconv.Itoa(g.rng.IntN(40)) + "-" + strconv.Itoa(g.rng.IntN(3))
	case 2:
		return strconv.Itoa(g.rng.IntN(40))
	}
	return strconv.Itoa(g.rng.IntN(40)) + "-" + strconv.Itoa(g.rng.IntN(3))
}

// streamAddID is XADD's id: mostly one that may follow the top item.
func streamAddID(g *diffGen) string {
	switch g.rng.IntN(6) {
	case 0:
		return strconv.Itoa(g.rng.IntN(60)) + "-*"
	case 1:
		return streamIDArg(g)
	}
	return strconv.Itoa(g.rng.IntN(60)) + "-" + strconv.Itoa(g.rng.IntN(4))
}

func streamGroupArg(g *diffGen) string { return g.pick("g0", "g1", "g1", "nogroup") }

func streamConsumerArg(g *diffGen) string { return g.pick("c0", "c1", "c2") }

// diffStreams generates the stream commands over explicit ids (an id
// from "*" is the server's clock, so such an entry goes to a key of its
// own, deleted at once, and its reply is compared by shape), including
// wrong types, bad arguments, trims by length and id with "=" and "~",
// consumer groups, and blocking reads with a short timeout. Replies that
// hold times (idle times, XINFO CONSUMERS, XINFO STREAM FULL) are left
// out or compared by shape: the two servers run a few ms apart.
func diffStreams(g *diffGen) diffCmd {
	key := streamKey(g)
	switch g.rng.IntN(30) {
	case 0, 1, 2, 3, 4, 5:
		args := []string{"XADD", key}
		switch g.rng.IntN(8) {
		case 0:
			args = append(args, "NOMKSTREAM")
		case 1:
			args = append(append(append(args, "MAXLEN"), trimMode(g)...), g.pick("0", "1", "3", "5", "-1", "x"))
		case 2:
			args = append(append(append(args, "MINID"), trimMode(g)...), streamIDArg(g))
		case 3:
			args = append(args, "MAXLEN", "~", g.pick("2", "4"), "LIMIT", g.pick("0", "1", "3", "-1"))
		}
		args = append(args, streamAddID(g))
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.field(), g.value())
		}
		if g.rng.IntN(20) == 0 {
			args = args[:len(args)-1] // odd fields
		}
		return diffCmdOf(exact, args...)
	case 6:
		g.pending = append(g.pending, diffCmdOf(exact, "DEL", "sx"))
		return diffCmdOf(shape, "XADD", "sx", "*", "f", "v")
	case 7, 8, 9:
		args := []string{g.pick("XRANGE", "XREVRANGE"), key, streamIDArg(g), streamIDArg(g)}
		if g.rng.IntN(2) == 0 {
			args = append(args, "COUNT", g.count())
		}
		return diffCmdOf(exact, args...)
	case 10:
		return diffCmdOf(exact, "XLEN", key)
	case 11:
		args := []string{"XDEL", key}
		for range 1 + g.rng.IntN(3) {
			args = append(args, streamIDArg(g))
		}
		return diffCmdOf(exact, args...)
	case 12:
		strategy := g.pick("MAXLEN", "MINID", "FOO")
		args := append([]string{"XTRIM", key, strategy}, trimMode(g)...)
		if strategy == "MINID" {
			args = append(args, streamIDArg(g))
		} else {
			args = append(args, g.pick("0", "2", "4", "-1"))
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "LIMIT", g.pick("1", "10", "0"))
		}
		return diffCmdOf(exact, args...)
	case 13, 14:
		args := []string{"XREAD"}
		if g.rng.IntN(2) == 0 {
			args = append(args, "COUNT", g.pick("1", "2", "0", "-1"))
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "BLOCK", g.pick("1", "2"))
		}
		keys := []string{key}
		if g.rng.IntN(2) == 0 {
			keys = append(keys, streamKey(g))
		}
		args = append(args, "STREAMS")
		args = append(args, keys...)
		for range keys {
			args = append(args, g.pick("0", "$", "10-1", "0-0", "20", ">"))
		}
		return diffCmdOf(exact, args...)
	case 15:
		args := []string{"XGROUP", "CREATE", key, streamGroupArg(g), g.pick("$", "0", "10-0", "x")}
		if g.rng.IntN(2) == 0 {
			args = append(args, "MKSTREAM")
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "ENTRIESREAD", g.pick("0", "3", "-1", "-2"))
		}
		return diffCmdOf(exact, args...)
	case 16:
		switch g.rng.IntN(4) {
		case 0:
			args := []string{"XGROUP", "SETID", key, streamGroupArg(g), g.pick("$", "0", "10-0", "x")}
			if g.rng.IntN(2) == 0 {
				args = append(args, "ENTRIESREAD", g.pick("0", "3", "-1"))
			}
			return diffCmdOf(exact, args...)
		case 1:
			return diffCmdOf(exact, "XGROUP", "DESTROY", key, streamGroupArg(g))
		case 2:
			return diffCmdOf(exact, "XGROUP", "CREATECONSUMER", key, streamGroupArg(g), streamConsumerArg(g))
		}
		return diffCmdOf(exact, "XGROUP", "DELCONSUMER", key, streamGroupArg(g), streamConsumerArg(g))
	case 17, 18, 19, 20:
		args := []string{"XREADGROUP", "GROUP", streamGroupArg(g), streamConsumerArg(g)}
		if g.rng.IntN(2) == 0 {
			args = append(args, "COUNT", g.pick("1", "2", "0"))
		}
		if g.rng.IntN(4) == 0 {
			args = append(args, "NOACK")
		}
		if g.rng.IntN(4) == 0 {
			args = append(args, "BLOCK", "1")
		}
		args = append(args, "STREAMS", key, g.pick(">", ">", ">", "0", "5-0", "$"))
		return diffCmdOf(exact, args...)
	case 21, 22:
		args := []string{"XACK", key, streamGroupArg(g)}
		for range 1 + g.rng.IntN(3) {
			args = append(args, streamIDArg(g))
		}
		return diffCmdOf(exact, args...)
	case 23:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(exact, "XPENDING", key, streamGroupArg(g))
		}
		args := []string{"XPENDING", key, streamGroupArg(g), streamIDArg(g), streamIDArg(g), g.count()}
		if g.rng.IntN(2) == 0 {
			args = append(args, streamConsumerArg(g))
		}
		return diffCmdOf(shape, args...)
	case 24, 25:
		args := []string{"XCLAIM", key, streamGroupArg(g), streamConsumerArg(g), g.pick("0", "0", "x", "-5")}
		for range 1 + g.rng.IntN(3) {
			args = append(args, streamIDArg(g))
		}
		for range g.rng.IntN(3) {
			args = append(args, g.pick("FORCE", "JUSTID", "RETRYCOUNT", "LASTID", "BOGUS"))
			switch args[len(args)-1] {
			case "RETRYCOUNT":
				args = append(args, g.pick("3", "x"))
			case "LASTID":
				args = append(args, streamIDArg(g))
			}
		}
		return diffCmdOf(exact, args...)
	case 26:
		args := []string{"XAUTOCLAIM", key, streamGroupArg(g), streamConsumerArg(g), g.pick("0", "x"), streamIDArg(g)}
		if g.rng.IntN(2) == 0 {
			args = append(args, "COUNT", g.pick("1", "2", "0", "x"))
		}
		if g.rng.IntN(3) == 0 {
			args = append(args, "JUSTID")
		}
		return diffCmdOf(exact, args...)
	case 27:
		if g.rng.IntN(2) == 0 {
			return diffCmdOf(exact, "XINFO", "GROUPS", key)
		}
		return diffCmdOf(shape, "XINFO", "STREAM", key)
	case 28:
		args := []string{"XSETID", key, streamIDArg(g)}
		if g.rng.IntN(2) == 0 {
			args = append(args, "ENTRIESADDED", g.pick("0", "5", "100", "-1"))
		}
		if g.rng.IntN(2) == 0 {
			args = append(args, "MAXDELETEDID", streamIDArg(g))
		}
		return diffCmdOf(exact, args...)
	default:
		return diffCmdOf(exact, g.pick("DEL", "TYPE", "EXISTS"), key)
	}
}

// trimMode is the optional "=" or "~" after MAXLEN or MINID.
func trimMode(g *diffGen) []string {
	switch g.rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{"="}
	}
	return []string{"~"}
}
