package server

func init() {
	register(spec{name: "copy", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, group: "generic", since: "6.2.0",
		summary: "Copies the value of a key to a new key.", run: cmdCopy})
}

// cmdCopy implements COPY source destination [DB n] [REPLACE], checking
// its arguments in Redis' order.
func cmdCopy(c *conn, _ *command, args [][]byte) error {
	src, dst := args[1], args[2]
	replace := false
	db := c.db
	for i := 3; i < len(args); i++ {
		switch {
		case is(args[i], "REPLACE"):
			replace = true
		case is(args[i], "DB") && i+1 < len(args):
			i++
			var err error
			if db, err = c.parseDB(args[i]); err != nil {
				return err
			}
		default:
			return redisError(msgSyntax)
		}
	}
	if c.sameKey(src, dst, db) {
		return redisError("ERR source and destination objects are the same")
	}
	held, e, exists, err := c.lockSource(args)
	defer c.unlock(held)
	if err != nil {
		return err
	}
	if !exists {
		c.wr.Int(0)
		return nil
	}
	to := &keyBuf{ns: c.dbs().ns[db]}
	old, taken, err := c.s.ks.getEntry(c.reader(), to, dst)
	if err != nil {
		return err
	}
	if taken && !replace {
		c.wr.Int(0)
		return nil
	}
	if err := c.putCopy(to, src, dst, e); err != nil {
		return err
	}
	if err := c.commit(); err != nil {
		return err
	}
	if taken {
		c.s.ks.reclaimDeleted(dst, old)
	}
	c.signalReady(dst) // a client may be blocked on dst (blocking.go)
	c.notifyNew(dst)   // Redis deletes a replaced dst and adds it anew
	c.notify(notifyGeneric, "copy_to", dst)
	c.wr.Int(1)
	return nil
}

// lockSource locks the keys args[1] and args[2] of COPY or RENAME and
// reads the source, args[1]. The caller unlocks held.
func (c *conn) lockSource(args [][]byte) (held lockSet, e entry, exists bool, err error) {
	held = c.lock(args[1:3], 1)
	e, exists, err = c.getEntry(args[1])
	return held, e, exists, err
}

// putCopy adds to the connection's batch a copy of e, the entry at src,
// as the entry at dst in to's namespace, with e's expiry: a string as it
// is, a collection with its elements under a new version (copyColl),
// O(elements) in one batch. On error it resets the batch.
func (c *conn) putCopy(to *keyBuf, src, dst []byte, e entry) error {
	if e.typ == typeString {
		c.s.ks.putEntry(c.batch, to, dst, e)
		return nil
	}
	if err := c.s.ks.copyColl(c.reader(), c.batch, to, src, dst, e); err != nil {
		c.batch.Reset()
		return err
	}
	return nil
}
