package server

import (
	"bytes"
	"slices"
)

func init() {
	const g = "set"
	rw, rwf, ro, rof := flagWrite|flagDenyOOM, flagWrite|flagDenyOOM|flagFast, flagReadonly, flagReadonly|flagFast
	register(
		spec{name: "sadd", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", run: cmdSAdd},
		spec{name: "srem", arity: -3, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", run: removeElems(typeSet)},
		spec{name: "sismember", arity: 3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Determines whether a member belongs to a set.", run: smIsMember(false)},
		spec{name: "smismember", arity: -3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.2.0",
			summary: "Determines whether multiple members belong to a set.", run: smIsMember(true)},
		spec{name: "smembers", arity: 2, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns all members of a set.", run: cmdSMembers},
		spec{name: "scard", arity: 2, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the number of members in a set.", run: cmdSCard},
		spec{name: "spop", arity: -2, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", run: cmdSPop},
		spec{name: "srandmember", arity: -2, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Get one or multiple random members from a set", run: cmdSRandMember},
		spec{name: "smove", arity: 4, flags: rwf, firstKey: 1, lastKey: 2, step: 1, group: g, since: "1.0.0",
			summary: "Moves a member from one set to another.", run: cmdSMove},
		spec{name: "sinter", arity: -2, flags: ro, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the intersect of multiple sets.", run: setAlgebra(setInter, false)},
		spec{name: "sunion", arity: -2, flags: ro, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the union of multiple sets.", run: setAlgebra(setUnion, false)},
		spec{name: "sdiff", arity: -2, flags: ro, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the difference of multiple sets.", run: setAlgebra(setDiff, false)},
		spec{name: "sinterstore", arity: -3, flags: rw, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Stores the intersect of multiple sets in a key.", run: setAlgebra(setInter, true)},
		spec{name: "sunionstore", arity: -3, flags: rw, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Stores the union of multiple sets in a key.", run: setAlgebra(setUnion, true)},
		spec{name: "sdiffstore", arity: -3, flags: rw, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Stores the difference of multiple sets in a key.", run: setAlgebra(setDiff, true)},
		spec{name: "sintercard", arity: -3, flags: ro | flagMovableKeys, firstKey: 1, lastKey: 1, step: 1, group: g, since: "7.0.0",
			summary: "Returns the number of members of the intersect of multiple sets.", run: cmdSInterCard},
		spec{name: "sscan", arity: -3, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.8.0",
			summary: "Iterates over members of a set.", run: func(c *conn, _ *command, args [][]byte) error { return c.scanColl(args, typeSet, nil, nil) }},
	)
}

func cmdSAdd(c *conn, _ *command, args [][]byte) error {
	key := args[1]
	var added int64
	if err := c.editCollEvent(key, typeSet, "sadd", func(m *collMeta, existed bool) error {
		var err error
		distinct(args[2:], func(member []byte) {
			var found bool
			if err == nil && existed {
				_, found, err = c.s.ks.getElem(c.reader(), &c.elemBuf, key, *m, member)
			}
			if err == nil && int64(len(member)) > maxElem(key) {
				err = errStringTooBig
			}
			if err == nil && !found {
				c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, member, nil)
				added++
			}
		})
		m.count += added
		return err
	}); err != nil {
		return err
	}
	c.wr.Int(added)
	return nil
}

// smIsMember returns the handler of SISMEMBER (an integer) or, when multi,
// SMISMEMBER (an array of them).
func smIsMember(multi bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		_, found, _, err := c.getElems(args[1], typeSet, nil, args[2:])
		if err != nil {
			return err
		}
		if multi {
			c.wr.ArrayHeader(len(found))
		}
		for _, f := range found {
			if f {
				c.wr.Int(1)
			} else {
				c.wr.Int(0)
			}
		}
		return nil
	}
}

// members returns the members of the set at key (none when it is absent)
// through the command's reader.
func (c *conn) members(key []byte) ([][]byte, error) {
	m, exists, err := c.getColl(key, typeSet)
	if err != nil || !exists {
		return nil, err
	}
	members, _, err := c.s.ks.readElems(c.reader(), key, m, nil)
	return members, err
}

// setReply writes members as a set: "~" in RESP3, an array in RESP2.
func (c *conn) setReply(members [][]byte) {
	c.wr.SetHeader(len(members))
	for _, m := range members {
		c.wr.Bulk(m)
	}
}

func cmdSMembers(c *conn, _ *command, args [][]byte) error {
	defer c.pin()()
	members, err := c.members(args[1])
	if err != nil {
		return err
	}
	c.setReply(members)
	return nil
}

func cmdSCard(c *conn, _ *command, args [][]byte) error {
	m, _, err := c.getColl(args[1], typeSet)
	if err != nil {
		return err
	}
	c.wr.Int(m.count)
	return nil
}

// cmdSPop implements SPOP key [count]: random members are picked in one
// pass over the set, then removed in one batch.
func cmdSPop(c *conn, _ *command, args [][]byte) error {
	if len(args) > 3 {
		return redisError(msgSyntax)
	}
	count := int64(1)
	if len(args) == 3 {
		var ok bool
		if count, ok = parseInt(args[2]); !ok || count < 0 {
			return redisError("ERR value is out of range, must be positive")
		}
	}
	key := args[1]
	var popped [][]byte
	if err := c.editCollEvent(key, typeSet, "spop", func(m *collMeta, existed bool) error {
		if !existed || count == 0 {
			return nil
		}
		var nodes *pickNodes
		if m.count >= seekMinSize {
			nodes = c.s.ks.spopNodes(&c.elemBuf, key, *m)
		}
		var cost walkCost
		var err error
		if popped, _, cost, err = c.s.ks.pickElems(c.reader(), key, *m, nil, count, nodes); err != nil {
			return err
		}
		if cost.mostlyDead() && int64(len(popped)) < m.count {
			c.s.ks.dropNodes(&c.elemBuf, key, *m)
			*m, err = c.freshColl(key, *m, popped)
			return err
		}
		for _, member := range popped {
			c.s.ks.deleteElem(c.batch, &c.elemBuf, key, *m, member)
			nodes.popped(member)
		}
		m.count -= int64(len(popped))
		if nodes != nil {
			nodes.count = m.count
		}
		return nil
	}); err != nil {
		return err
	}
	if len(args) == 2 {
		if len(popped) == 0 {
			c.wr.Null()
		} else {
			c.wr.Bulk(popped[0])
		}
		return nil
	}
	c.setReply(popped)
	return nil
}

func cmdSRandMember(c *conn, _ *command, args [][]byte) error {
	if len(args) > 3 {
		return redisError(msgSyntax)
	}
	key := args[1]
	var count int64
	if len(args) == 3 {
		var err error
		if count, err = randCount(args[2]); err != nil {
			return err
		}
	}
	picked, _, done, err := c.randomElems(key, typeSet, nil, len(args) == 2, count)
	if err != nil || done {
		return err
	}
	c.wr.ArrayHeader(len(picked))
	for _, p := range picked {
		c.wr.Bulk(p)
	}
	return nil
}

func cmdSMove(c *conn, _ *command, args [][]byte) error {
	src, dst, member := args[1], args[2], args[3]
	held := c.lock(args[1:3], 1)
	defer c.unlock(held)
	// Redis' order: a missing source answers 0 before the
	// destination's type is checked.
	sm, srcExists, err := c.getColl(src, typeSet)
	if err != nil {
		return err
	}
	if !srcExists {
		c.wr.Int(0)
		return nil
	}
	dm, dstExists, err := c.getColl(dst, typeSet)
	if err != nil {
		return err
	}
	c.s.ks.dropNodes(&c.elemBuf, src, sm)
	if dstExists {
		c.s.ks.dropNodes(&c.elemBuf, dst, dm)
	}
	_, found, err := c.getElem(src, sm, member)
	if err != nil {
		return err
	}
	if !found || bytes.Equal(src, dst) {
		if found {
			c.wr.Int(1)
		} else {
			c.wr.Int(0)
		}
		return nil
	}
	c.s.ks.deleteElem(c.batch, &c.elemBuf, src, sm, member)
	sm.count--
	c.s.ks.putColl(c.batch, &c.scratch, src, sm)
	inDst := false
	if !dstExists {
		var err error
		if dm, err = c.s.ks.newColl(c.scratch.ns, typeSet); err != nil {
			c.batch.Reset()
			return err
		}
	} else if _, inDst, err = c.getElem(dst, dm, member); err != nil {
		c.batch.Reset()
		return err
	}
	if !inDst {
		c.s.ks.putElem(c.batch, &c.elemBuf, dst, dm, member, nil)
		dm.count++
		c.s.ks.putColl(c.batch, &c.scratch, dst, dm)
	}
	if err := c.commit(); err != nil {
		return err
	}
	c.notifyEdit(typeSet, "srem", src, false, sm.count == 0)
	if !inDst {
		c.notifyEdit(typeSet, "sadd", dst, !dstExists, false)
	}
	c.wr.Int(1)
	return nil
}

// setOp names a set operation of setAlgebra.
type setOp uint8

const (
	setInter setOp = iota
	setUnion
	setDiff
)

// setAlgebra returns the handler of SINTER, SUNION or SDIFF, or with store
// of their STORE forms, which write the result to args[1] (deleting it
// when the result is empty) and reply with its size. The sets are read
// whole into memory: O(total members). Redis checks the keys' types in
// order and SINTER stops at the first missing key; so does this.
func setAlgebra(op setOp, store bool) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		keys := args[1:]
		var held lockSet
		if store {
			held = c.lock(keys, 1)
			defer c.unlock(held)
			keys = keys[1:]
		} else {
			defer c.pin()()
		}
		result, err := c.combine(op, keys)
		if err != nil {
			return err
		}
		if !store {
			c.setReply(result)
			return nil
		}
		return c.storeColl(args[1], typeSet, cmd.name, len(result), func(m collMeta) {
			for _, member := range result {
				c.s.ks.putElem(c.batch, &c.elemBuf, args[1], m, member, nil)
			}
		})
	}
}

// combine computes op over the sets at keys, in byte order. As in Redis,
// every key's type is checked before any set is read; a missing key is an
// empty set.
func (c *conn) combine(op setOp, keys [][]byte) ([][]byte, error) {
	metas := make([]collMeta, len(keys))
	exists := make([]bool, len(keys))
	for i, key := range keys {
		var err error
		if metas[i], exists[i], err = c.getColl(key, typeSet); err != nil {
			return nil, err
		}
	}
	if op == setDiff && !exists[0] || op == setInter && slices.Contains(exists, false) {
		return nil, nil
	}
	result := map[string]struct{}{}
	for i, key := range keys {
		if !exists[i] {
			continue
		}
		members, _, err := c.s.ks.readElems(c.reader(), key, metas[i], nil)
		if err != nil {
			return nil, err
		}
		switch {
		case i == 0 || op == setUnion:
			for _, mb := range members {
				result[string(mb)] = struct{}{}
			}
		case op == setDiff:
			for _, mb := range members {
				delete(result, string(mb))
			}
		default:
			in := make(map[string]struct{}, len(members))
			for _, mb := range members {
				in[string(mb)] = struct{}{}
			}
			for mb := range result {
				if _, ok := in[mb]; !ok {
					delete(result, mb)
				}
			}
		}
	}
	out := make([][]byte, 0, len(result))
	for mb := range result {
		out = append(out, []byte(mb))
	}
	slices.SortFunc(out, bytes.Compare)
	return out, nil
}

// cmdSInterCard implements SINTERCARD numkeys key [key ...] [LIMIT limit].
func cmdSInterCard(c *conn, _ *command, args [][]byte) error {
	n, ok := parseInt(args[1])
	if !ok || n <= 0 {
		return redisError("ERR numkeys should be greater than 0")
	}
	if n > int64(len(args)-2) {
		return redisError("ERR Number of keys can't be greater than number of args")
	}
	keys := args[2 : 2+n]
	limit := int64(0)
	for rest := args[2+n:]; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 || !is(rest[0], "LIMIT") {
			return redisError(msgSyntax)
		}
		if limit, ok = parseInt(rest[1]); !ok {
			return redisError("ERR LIMIT can't be negative")
		}
		if limit < 0 {
			return redisError("ERR LIMIT can't be negative")
		}
	}
	defer c.pin()()
	result, err := c.combine(setInter, keys)
	if err != nil {
		return err
	}
	size := int64(len(result))
	if limit > 0 {
		size = min(size, limit)
	}
	c.wr.Int(size)
	return nil
}
