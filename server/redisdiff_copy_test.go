package server

import "strings"

func init() { diffGroups = append(diffGroups, diffGroup{"copy-object", 3, diffCopyObject}) }

// diffCopyObject generates COPY over the shared keys, whatever their type,
// and OBJECT ENCODING and FREQ on keys of their own ("obj0" to "obj2")
// that only SET writes: Redis' answer for a string depends on how it was
// written (APPEND and SETRANGE leave "raw"), and for a collection on its
// size, where this server answers by the value alone (doc/server.md,
// "OBJECT"). COPY ... DB between databases is diffDatabases'; here it
// gets the index of database 0 and indexes that both refuse.
func diffCopyObject(g *diffGen) diffCmd {
	obj := g.pick("obj0", "obj1", "obj2")
	switch g.rng.IntN(8) {
	case 0, 1:
		args := []string{"COPY", g.key(), g.key()}
		for range g.rng.IntN(3) {
			switch g.rng.IntN(4) {
			case 0:
				args = append(args, "DB", g.pick("0", "-1", "16", "x", "99999999999"))
			case 1:
				args = append(args, g.pick("DB", "REPLACES", "NX"))
			default:
				args = append(args, g.pick("REPLACE", "replace"))
			}
		}
		return diffCmdOf(exact, args...)
	case 2:
		// The same key twice, or a copy between the OBJECT keys, which
		// keeps a string's encoding in Redis. Nothing moves between them
		// and the shared keys: a hash or an appended string would change
		// what OBJECT says, and their extreme integers the exact float
		// sums of INCRBYFLOAT.
		if g.rng.IntN(2) == 0 {
			k := g.key()
			return diffCmdOf(exact, "COPY", k, k, "REPLACE")
		}
		return diffCmdOf(exact, "COPY", obj, g.pick("obj0", "obj1", "obj2"), g.pick("REPLACE", "DB", "db 0"))
	case 3:
		return diffCmdOf(exact, "SET", obj, g.pick("0", "123", "-5", "9999", "10000", "01", "+1", " 1", "-0", "1.5",
			"9223372036854775807", "9223372036854775808", "-9223372036854775808", "12345678901234567890",
			"", "abc", strings.Repeat("s", 44), strings.Repeat("s", 45), g.value()))
	case 4, 5:
		return diffCmdOf(exact, "OBJECT", g.pick("ENCODING", "encoding", "FREQ"), obj)
	case 6:
		return diffCmdOf(exact, "OBJECT", "ENCODING", "missing-key")
	default:
		return diffCmdOf(exact, g.pick("OBJECT", "COPY"), g.pick("ENCODING", "FOO", obj), g.pick("", "obj0 x"))
	}
}
