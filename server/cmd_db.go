package server

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo"
)

// The commands of databases (databases.go): SELECT, SWAPDB, MOVE, DBSIZE,
// FLUSHDB and FLUSHALL. COPY's DB option is in cmd_copy.go.

func init() {
	const g, srv = "generic", "server"
	register(
		spec{name: "select", arity: 2, flags: flagLoading | flagStale | flagFast, group: "connection", since: "1.0.0",
			summary: "Changes the selected database.", run: cmdSelect},
		spec{name: "swapdb", arity: 3, flags: flagWrite | flagFast, group: srv, since: "4.0.0",
			summary: "Swaps two Redis databases.", run: cmdSwapDB},
		spec{name: "move", arity: 3, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Moves a key to another database.", run: cmdMove},
		spec{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, group: srv, since: "1.0.0",
			summary: "Returns the number of keys in the database.", run: cmdDBSize},
		spec{name: "flushdb", arity: -1, flags: flagWrite, group: srv, since: "1.0.0",
			summary: "Removes all keys from the current database.", run: cmdFlush(false)},
		spec{name: "flushall", arity: -1, flags: flagWrite, group: srv, since: "1.0.0",
			summary: "Removes all keys from all databases.", run: cmdFlush(true)},
	)
}

// parseDB reads a database index as the connection's commands take it.
func (c *conn) parseDB(arg []byte) (int, error) { return parseDB(arg, c.s.databases) }

func cmdSelect(c *conn, _ *command, args [][]byte) error {
	db, err := c.parseDB(args[1])
	if err != nil {
		return err
	}
	c.selectDB(db)
	c.ok()
	return nil
}

// selectDB makes db the connection's database, also as CLIENT LIST shows
// it.
func (c *conn) selectDB(db int) {
	c.db = db
	c.useDB()
	c.info.Lock()
	c.info.db = db
	c.info.Unlock()
}

func cmdSwapDB(c *conn, _ *command, args [][]byte) error {
	// Both must be numbers before either is checked against the range,
	// as in Redis.
	if _, ok := parseInt(args[1]); !ok {
		return redisError("ERR invalid first DB index")
	}
	if _, ok := parseInt(args[2]); !ok {
		return redisError("ERR invalid second DB index")
	}
	a, err := c.parseDB(args[1])
	if err != nil {
		return err
	}
	b, err := c.parseDB(args[2])
	if err != nil {
		return err
	}
	if a != b {
		if err := c.changeDBs(func(m *dbMap) error {
			m.ns[a], m.ns[b] = m.ns[b], m.ns[a]
			return nil
		}); err != nil {
			return err
		}
	}
	c.ok()
	return nil
}

// cmdFlush implements FLUSHDB and FLUSHALL [ASYNC|SYNC]: the databases get
// new, empty namespaces, in one write whatever they held.
func cmdFlush(all bool) func(c *conn, _ *command, args [][]byte) error {
	return func(c *conn, _ *command, args [][]byte) error {
		if len(args) > 2 || len(args) == 2 && !is(args[1], "ASYNC") && !is(args[1], "SYNC") {
			return redisError(msgSyntax)
		}
		err := c.changeDBs(func(m *dbMap) error {
			if !all {
				return m.fresh(c.db)
			}
			for db := range m.ns {
				if err := m.fresh(db); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		c.s.invalidateAll(c)
		c.ok()
		return nil
	}
}

func cmdDBSize(c *conn, _ *command, _ [][]byte) error {
	r, ns := c.readNS()
	var n int64
	err := c.s.ks.scanKeys(r, ns, nil, nil, func([]byte, byte, bool) bool {
		n++
		return true
	})
	if err != nil {
		return err
	}
	c.wr.Int(n)
	return nil
}

// readNS returns the running command's reader and the namespace of its
// database.
func (c *conn) readNS() (lsmgo.Reader, nsID) {
	r := c.reader()
	return r, c.scratch.ns
}

// cmdMove implements MOVE key db, with Redis' checks in Redis' order. A
// collection moves with its elements, O(elements) in one batch, as COPY
// copies it.
func cmdMove(c *conn, _ *command, args [][]byte) error {
	db, err := c.parseDB(args[2])
	if err != nil {
		return err
	}
	if db == c.db {
		return redisError("ERR source and destination objects are the same")
	}
	key := args[1]
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	e, exists, err := c.getEntry(key)
	if err != nil || !exists {
		if err == nil {
			c.wr.Int(0)
		}
		return err
	}
	dst := &keyBuf{ns: c.dbs().ns[db]}
	taken, err := c.s.ks.exists(c.reader(), dst, key)
	if err != nil || taken {
		if err == nil {
			c.wr.Int(0)
		}
		return err
	}
	if err := c.putCopy(dst, key, key, e); err != nil {
		return err
	}
	c.s.ks.deleteKey(c.batch, &c.scratch, key)
	if err := c.commit(); err != nil {
		return err
	}
	c.s.ks.reclaimDeleted(key, e)
	c.signalReady(key) // a client may be blocked on key in db
	c.notifyIn(db, notifyNew, "new", key)
	c.notify(notifyGeneric, "move_from", key)
	c.notifyIn(db, notifyGeneric, "move_to", key)
	c.wr.Int(1)
	return nil
}

// sameKey reports whether a copy from src in the connection's database to
// dst in database db would be onto itself.
func (c *conn) sameKey(src, dst []byte, db int) bool {
	return db == c.db && bytes.Equal(src, dst)
}
