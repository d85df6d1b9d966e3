package server

func init() { diffGroups = append(diffGroups, diffGroup{"databases", 4, diffDatabases}) }

// diffDatabases generates the commands of databases: SELECT among the
// first three (so the other groups' writes of every type land in each),
// MOVE, SWAPDB, FLUSHDB and COPY … DB between them, and the per-database
// reads, with indexes both servers refuse now and then.
func diffDatabases(g *diffGen) diffCmd {
	db := func() string { return g.pick("0", "1", "2", "0", "1", "2", "16", "-1", "x") }
	switch g.rng.IntN(12) {
	case 0, 1, 2:
		return diffCmdOf(exact, "SELECT", g.pick("0", "1", "2", "0", "1", "2", db()))
	case 3, 4:
		return diffCmdOf(exact, "MOVE", g.key(), db())
	case 5:
		return diffCmdOf(exact, "SWAPDB", db(), db())
	case 6:
		if g.rng.IntN(4) == 0 {
			return diffCmdOf(exact, "FLUSHDB", g.pick("ASYNC", "SYNC", "x"))
		}
		return diffCmdOf(exact, "FLUSHDB")
	case 7, 8:
		args := []string{"COPY", g.key(), g.key(), "DB", db()}
		if g.rng.IntN(2) == 0 {
			args = append(args, "REPLACE")
		}
		return diffCmdOf(exact, args...)
	case 9:
		return diffCmdOf(exact, "DBSIZE")
	case 10:
		return diffCmdOf(unordered, "KEYS", "*")
	default:
		return diffCmdOf(shape, "RANDOMKEY")
	}
}
