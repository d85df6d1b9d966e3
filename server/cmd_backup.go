package server

func init() {
	const srv = "server"
	register(
		spec{name: "bgsave", arity: -1, flags: flagAdmin, group: srv, since: "1.0.0",
			summary: "Asynchronously saves the database(s) to disk.", run: cmdBgsave},
		spec{name: "save", arity: 1, flags: flagAdmin, group: srv, since: "1.0.0",
			summary: "Synchronously saves the database(s) to disk.", run: cmdSave},
		spec{name: "lastsave", arity: 1, flags: flagLoading | flagStale | flagFast, group: srv, since: "1.0.0",
			summary: "Returns the Unix timestamp of the last successful save to disk.", run: cmdLastsave},
	)
}

// cmdBgsave implements BGSAVE [SCHEDULE]: a checkpoint of the engine,
// stored as a new backup in backup-dir, in the background. Redis writes
// an RDB file; lsmgo's data is always on disk, so its "save" is a backup.
func cmdBgsave(c *conn, _ *command, args [][]byte) error {
	if len(args) > 2 || len(args) == 2 && !is(args[1], "SCHEDULE") {
		return redisError("ERR syntax error")
	}
	scheduled, err := c.s.startBackgroundBackup(len(args) == 2)
	switch {
	case err != nil:
		return redisError(err.Error())
	case scheduled:
		c.wr.SimpleString("Background saving scheduled")
	default:
		c.wr.SimpleString("Background saving started")
	}
	return nil
}

// cmdSave implements SAVE: the same backup as BGSAVE, answered when it is
// done. Unlike Redis' SAVE it blocks only the client that sent it.
func cmdSave(c *conn, _ *command, _ [][]byte) error {
	dest, err := c.s.beginBackup()
	if err != nil {
		return redisError(err.Error())
	}
	ctx, cancel := c.s.shutdownContext()
	defer cancel()
	_, again, err := c.s.runBackup(ctx, dest)
	if again {
		c.s.startBackgroundBackup(false)
	}
	if err != nil {
		return redisError("ERR " + err.Error())
	}
	c.ok()
	return nil
}

// cmdLastsave implements LASTSAVE: the Unix time at which the last
// successful backup began (it holds every write acknowledged before),
// or the server's start before the first.
func cmdLastsave(c *conn, _ *command, _ [][]byte) error {
	c.wr.Int(c.s.backupInfo().lastSave.Unix())
	return nil
}
