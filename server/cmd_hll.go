package server

import (
	"github.com/lsmgo-dev/lsmgo/server/internal/hll"
)

// HyperLogLog commands keep Redis' HLL bytes (package hll) in plain
// string values, so GET, DUMP and SET see what Redis would show.
func init() {
	const g = "hyperloglog"
	register(
		spec{name: "pfadd", arity: -2, flags: flagWrite | flagDenyOOM | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.8.9",
			summary: "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", run: cmdPFAdd},
		// PFCOUNT of one key writes the cached cardinality back, as in
		// Redis, which still flags it read-only.
		spec{name: "pfcount", arity: -2, flags: flagReadonly, firstKey: 1, lastKey: -1, step: 1, group: g, since: "2.8.9",
			summary: "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", run: cmdPFCount},
		spec{name: "pfmerge", arity: -2, flags: flagWrite | flagDenyOOM, firstKey: 1, lastKey: -1, step: 1, group: g, since: "2.8.9",
			summary: "Merges one or more HyperLogLog values into a single key.", run: cmdPFMerge},
		spec{name: "pfdebug", arity: 3, flags: flagWrite | flagDenyOOM | flagAdmin, firstKey: 2, lastKey: 2, step: 1, group: g, since: "2.8.9",
			summary: "Internal commands for debugging HyperLogLog values.", run: cmdPFDebug},
		spec{name: "pfselftest", arity: 1, flags: flagAdmin, group: g, since: "2.8.9",
			summary: "An internal command for testing HyperLogLog values.", run: cmdPFSelfTest},
	)
}

// getHLL reads key as a HyperLogLog: Redis' error when it holds another
// type or a string that is not one.
func (c *conn) getHLL(key []byte) (v stringValue, exists bool, err error) {
	if v, exists, err = c.get(key); err != nil || !exists {
		return v, exists, err
	}
	if err := hll.Check(v.val); err != nil {
		return v, exists, redisError(err.Error())
	}
	return v, exists, nil
}

// hllError turns the hll package's errors into replies.
func hllError(err error) error { return redisError(err.Error()) }

func cmdPFAdd(c *conn, _ *command, args [][]byte) error {
	// Most adds to a filled HyperLogLog raise no register. Such an add is
	// a read, and like other reads needs no lock: it takes effect at the
	// moment of the read.
	if v, exists, err := c.getHLL(args[1]); err != nil {
		return err
	} else if exists && !hll.WouldChange(v.val, args[2:]) {
		c.wr.Int(0)
		return nil
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	v, exists, err := c.getHLL(args[1])
	if err != nil {
		return err
	}
	cur := v.val
	if !exists {
		cur = hll.New()
	}
	out, changed, err := hll.Add(cur, args[2:], c.s.config().HLLSparseMaxBytes)
	if err != nil {
		return hllError(err)
	}
	// Creating the key counts as a change, even with no elements.
	if !changed && exists {
		c.wr.Int(0)
		return nil
	}
	v.val = out
	if err := c.put(args[1], v); err != nil {
		return err
	}
	c.notifyEdit(typeString, "pfadd", args[1], !exists, false)
	c.wr.Int(1)
	return nil
}

func cmdPFCount(c *conn, _ *command, args [][]byte) error {
	if len(args) > 2 {
		var u hll.Union
		for _, key := range args[1:] {
			v, exists, err := c.getHLL(key)
			if err != nil {
				return err
			}
			if !exists {
				continue
			}
			if err := u.Merge(v.val); err != nil {
				return hllError(err)
			}
		}
		c.wr.Int(int64(u.Count()))
		return nil
	}
	// A valid cached cardinality is a plain read; only a stale one is
	// computed and written back, under the lock.
	v, exists, err := c.getHLL(args[1])
	if err != nil {
		return err
	}
	if exists {
		if card, ok := hll.Cached(v.val); ok {
			c.wr.Int(int64(card))
			return nil
		}
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	if v, exists, err = c.getHLL(args[1]); err != nil {
		return err
	}
	if !exists {
		c.wr.Int(0)
		return nil
	}
	card, updated, err := hll.Count(v.val)
	if err != nil {
		return hllError(err)
	}
	// A replica writes nothing of its own: a local write would take the
	// sequence numbers of its primary's next batch.
	if updated != nil && !c.s.repl.following.Load() {
		v.val = updated
		if err := c.put(args[1], v); err != nil {
			return err
		}
	}
	c.wr.Int(int64(card))
	return nil
}

func cmdPFMerge(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[1:], 1)
	defer c.unlock(held)
	var u hll.Union
	var dest stringValue
	destExists := false
	// The destination is merged first, as Redis counts it among the
	// sources.
	for i, key := range args[1:] {
		v, exists, err := c.getHLL(key)
		if err != nil {
			return err
		}
		if i == 0 {
			dest, destExists = v, exists
		}
		if !exists {
			continue
		}
		if err := u.Merge(v.val); err != nil {
			return hllError(err)
		}
	}
	var cur []byte
	if destExists {
		cur = dest.val
	}
	out, err := u.Store(cur, c.s.config().HLLSparseMaxBytes)
	if err != nil {
		return hllError(err)
	}
	dest.val = out
	if err := c.put(args[1], dest); err != nil {
		return err
	}
	c.notifyEdit(typeString, "pfadd", args[1], !destExists, false)
	c.ok()
	return nil
}

// cmdPFDebug implements PFDEBUG GETREG, DECODE, ENCODING and TODENSE with
// Redis' replies; GETREG and TODENSE store a sparse value converted to
// dense, as Redis does.
func cmdPFDebug(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[2:3], 1)
	defer c.unlock(held)
	v, exists, err := c.getHLL(args[2])
	if err != nil {
		return err
	}
	if !exists {
		return redisError("ERR The specified key does not exist")
	}
	sub := args[1]
	switch {
	case is(sub, "GETREG"), is(sub, "TODENSE"):
		wasSparse := hll.Sparse(v.val)
		dense, err := hll.ToDense(v.val)
		if err != nil {
			return hllError(err)
		}
		if wasSparse {
			v.val = dense
			if err := c.put(args[2], v); err != nil {
				return err
			}
		}
		if is(sub, "TODENSE") {
			c.wr.Int(int64(boolInt(wasSparse)))
			return nil
		}
		regs := hll.DenseRegisters(dense)
		c.wr.ArrayHeader(len(regs))
		for _, r := range regs {
			c.wr.Int(int64(r))
		}
	case is(sub, "DECODE"):
		text, err := hll.Decode(v.val)
		if err != nil {
			return hllError(err)
		}
		c.wr.BulkString(text)
	case is(sub, "ENCODING"):
		if hll.Sparse(v.val) {
			c.wr.SimpleString("sparse")
		} else {
			c.wr.SimpleString("dense")
		}
	default:
		return redisError("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
	return nil
}

func cmdPFSelfTest(c *conn, _ *command, _ [][]byte) error {
	if err := hll.SelfTest(); err != nil {
		return hllError(err)
	}
	c.ok()
	return nil
}
