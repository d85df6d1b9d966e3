package server

import (
	"bytes"
)

func init() {
	register(spec{name: "copy", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, group: "generic", since: "6.2.0",
		summary: "Copies the value of a key to a new key.", run: cmdCopy})
}

// cmdCopy implements COPY source destination [DB n] [REPLACE], checking
// its arguments in Redis' order. The only database is 0, so DB takes 0
// alone and answers any other index as out of range (doc/server.md).
func cmdCopy(c *conn, _ *command, args [][]byte) {
	src, dst := args[1], args[2]
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case is(args[i], "REPLACE"):
			replace = true
		case is(args[i], "DB") && i+1 < len(args):
			i++
			if !c.checkDB(args[i]) {
				return
			}
		default:
			c.fail(msgSyntax)
			return
		}
	}
	if bytes.Equal(src, dst) {
		c.fail("ERR source and destination objects are the same")
		return
	}
	held, e, ok := c.lockSource(args, func() { c.wr.Int(0) })
	defer c.unlock(held)
	if !ok {
		return
	}
	old, taken, ok := c.getEntry(dst)
	if !ok {
		return
	}
	if taken && !replace {
		c.wr.Int(0)
		return
	}
	if !c.putCopy(src, dst, e) || !c.apply() {
		return
	}
	if taken {
		c.s.ks.reclaimDeleted(dst, old)
	}
	c.signalReady(dst) // a client may be blocked on dst (blocking.go)
	c.wr.Int(1)
}

// lockSource locks the keys args[1] and args[2] of COPY or RENAME and
// reads the source, args[1]. The caller unlocks held; ok is false when
// lockSource has replied: with the read's error, or by calling missing
// when the source is absent.
func (c *conn) lockSource(args [][]byte, missing func()) (held lockSet, e entry, ok bool) {
	held = c.lock(args[1:3], 1)
	e, exists, ok := c.getEntry(args[1])
	if ok && !exists {
		missing()
	}
	return held, e, ok && exists
}

// putCopy adds to the connection's batch a copy of e, the entry at src,
// as the entry at dst, with e's expiry: a string as it is, a collection
// with its elements under a new version (copyColl), O(elements) in one
// batch. On error it resets the batch, replies and returns false.
func (c *conn) putCopy(src, dst []byte, e entry) bool {
	if e.typ == typeString {
		c.s.ks.putEntry(c.batch, &c.scratch, dst, e)
		return true
	}
	if err := c.s.ks.copyColl(c.reader(), c.batch, &c.scratch, src, dst, e); err != nil {
		c.batch.Reset()
		c.replyErr(err)
		return false
	}
	return true
}
