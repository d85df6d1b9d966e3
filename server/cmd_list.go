package server

import (
	"bytes"
	"errors"
	"math"
	"slices"
)

// The list commands: they parse arguments and reply; list.go has the
// encoding.

func init() {
	const g = "list"
	rw, rwf, w, wf := flagWrite|flagDenyOOM, flagWrite|flagDenyOOM|flagFast, flagWrite, flagWrite|flagFast
	ro, rof := flagReadonly, flagReadonly|flagFast
	register(
		spec{name: "lpush", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", run: push(true, false)},
		spec{name: "rpush", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", run: push(false, false)},
		spec{name: "lpushx", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Prepends one or more elements to a list only when the list exists.", run: push(true, true)},
		spec{name: "rpushx", arity: -3, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Appends an element to a list only when the list exists.", run: push(false, true)},
		spec{name: "lpop", arity: -2, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", run: pop(true)},
		spec{name: "rpop", arity: -2, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", run: pop(false)},
		spec{name: "llen", arity: 2, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the length of a list.", run: cmdLLen},
		spec{name: "lrange", arity: 4, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns a range of elements from a list.", run: cmdLRange},
		spec{name: "lindex", arity: 3, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns an element from a list by its index.", run: cmdLIndex},
		spec{name: "lset", arity: 4, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Sets the value of an element in a list by its index.", run: cmdLSet},
		spec{name: "linsert", arity: 5, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Inserts an element before or after another element in a list.", run: cmdLInsert},
		spec{name: "lrem", arity: 4, flags: w, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Removes elements from a list. Deletes the list if the last element was removed.", run: cmdLRem},
		spec{name: "ltrim", arity: 4, flags: w, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", run: cmdLTrim},
		spec{name: "lpos", arity: -3, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.0.6",
			summary: "Returns the index of matching elements in a list.", run: cmdLPos},
		spec{name: "lmove", arity: 5, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "6.2.0",
			summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", run: lmove(false)},
		spec{name: "rpoplpush", arity: 3, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "1.2.0",
			summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", run: rpoplpush(false)},
		spec{name: "lmpop", arity: -4, flags: w, group: g, since: "7.0.0",
			summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", run: mpop(false)},
		spec{name: "blpop", arity: -3, flags: w, firstKey: 1, lastKey: -2, step: 1, group: g, since: "2.0.0",
			summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: bpop(true)},
		spec{name: "brpop", arity: -3, flags: w, firstKey: 1, lastKey: -2, step: 1, group: g, since: "2.0.0",
			summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: bpop(false)},
		spec{name: "blmove", arity: 6, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "6.2.0",
			summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", run: lmove(true)},
		spec{name: "brpoplpush", arity: 4, flags: rw, firstKey: 1, lastKey: 2, step: 1, group: g, since: "2.2.0",
			summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", run: rpoplpush(true)},
		spec{name: "blmpop", arity: -5, flags: w, group: g, since: "7.0.0",
			summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", run: mpop(true)},
	)
}

const (
	msgOutOfRange    = "ERR index out of range"
	msgMustBePositve = "ERR value is out of range, must be positive"
)

// push returns the handler of LPUSH (left) or RPUSH, or with existing of
// LPUSHX or RPUSHX, which push only onto an existing list.
func push(left, existing bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		key := args[1]
		for _, v := range args[2:] {
			if err := checkListElem(key, v); err != nil {
				return err
			}
		}
		var n int64
		if err := c.editCollEvent(key, typeList, sideEvent(left, "push"), func(m *collMeta, existed bool) error {
			if existed || !existing {
				for _, v := range args[2:] {
					c.s.ks.listPush(c.batch, &c.elemBuf, key, m, left, v)
				}
				n = m.count
			}
			return nil
		}); err != nil {
			return err
		}
		if n > 0 {
			c.signalReady(key)
		}
		c.wr.Int(n)
		return nil
	}
}

// pop returns the handler of LPOP (left) or RPOP, with an optional count.
func pop(left bool) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		if len(args) > 3 {
			return redisError(wrongArity(cmd))
		}
		count := int64(1)
		if len(args) == 3 {
			var ok bool
			if count, ok = parseInt(args[2]); !ok || count < 0 {
				return redisError(msgMustBePositve)
			}
		}
		key := args[1]
		var vals [][]byte
		var exists bool
		if err := c.editCollEvent(key, typeList, sideEvent(left, "pop"), func(m *collMeta, existed bool) error {
			exists = existed
			if !existed || count == 0 {
				return nil
			}
			var err error
			vals, err = c.s.ks.listPopN(c.reader(), c.batch, &c.elemBuf, key, m, left, count)
			return err
		}); err != nil {
			return err
		}
		switch {
		case len(args) == 2 && !exists:
			c.wr.Null()
		case len(args) == 2:
			c.wr.Bulk(vals[0])
		case !exists:
			c.wr.NullArray()
		default:
			c.bulks(vals)
		}
		return nil
	}
}

// bulks replies with vals as an array.
func (c *conn) bulks(vals [][]byte) {
	c.wr.ArrayHeader(len(vals))
	for _, v := range vals {
		c.wr.Bulk(v)
	}
}

func cmdLLen(c *conn, _ *command, args [][]byte) error {
	m, _, err := c.getColl(args[1], typeList)
	if err != nil {
		return err
	}
	c.wr.Int(m.count)
	return nil
}

// parseRange parses LRANGE's and LTRIM's start and end, replying on
// error.
func parseRange(startArg, endArg []byte) (start, end int64, err error) {
	start, ok1 := parseInt(startArg)
	end, ok2 := parseInt(endArg)
	if !ok1 || !ok2 {
		return 0, 0, redisError(msgNotInteger)
	}
	return start, end, nil
}

func cmdLRange(c *conn, _ *command, args [][]byte) error {
	start, end, err := parseRange(args[2], args[3])
	if err != nil {
		return err
	}
	key := args[1]
	defer c.pin()()
	m, exists, err := c.getColl(key, typeList)
	if err != nil {
		return err
	}
	c.countLookup(key, exists)
	from, to, empty := listRange(start, end, m.count)
	if empty {
		c.wr.ArrayHeader(0)
		return nil
	}
	// Streamed: a range bigger than memory goes out as it is read. A
	// failure after the header cannot be a reply any more; the
	// connection closes instead.
	c.wr.ArrayHeader(int(to - from + 1))
	if err := c.s.ks.listScan(c.reader(), key, m, from, to, false, func(_ int64, val []byte) bool {
		c.wr.Bulk(val)
		return true
	}); err != nil {
		c.replyErr(err)
		c.quit = true
	}
	return nil
}

func cmdLIndex(c *conn, _ *command, args [][]byte) error {
	key := args[1]
	return c.pointRead(func() error {
		m, exists, err := c.readColl(key, typeList)
		if err != nil {
			return err
		}
		if !exists {
			c.countLookup(key, false)
			c.wr.Null()
			return nil
		}
		i, ok := parseInt(args[2])
		if i < 0 {
			i += m.count
		}
		if !ok || i < 0 || i >= m.count {
			c.countLookup(key, true)
			if !ok {
				return redisError(msgNotInteger)
			}
			c.wr.Null()
			return nil
		}
		val, err := c.s.ks.listGet(c.reader(), &c.elemBuf, c.vals[:0], key, m, i)
		c.vals = val
		if err != nil && c.elemMissed(key, m) == errReadRaced {
			return errReadRaced // the slot was the replaced list's
		}
		c.countLookup(key, true)
		if err != nil {
			return err
		}
		c.wr.Bulk(val)
		return nil
	})
}

func cmdLSet(c *conn, _ *command, args [][]byte) error {
	key, val := args[1], args[3]
	if err := c.editCollEvent(key, typeList, "lset", func(m *collMeta, existed bool) error {
		if !existed {
			return redisError(msgNoSuchKey)
		}
		i, ok := parseInt(args[2])
		if !ok {
			return redisError(msgNotInteger)
		}
		if i < 0 {
			i += m.count
		}
		if i < 0 || i >= m.count {
			return redisError(msgOutOfRange)
		}
		if err := checkListElem(key, val); err != nil {
			return err
		}
		c.s.ks.listPut(c.batch, &c.elemBuf, key, *m, i, val)
		return nil
	}); err != nil {
		return err
	}
	c.ok()
	return nil
}

func cmdLInsert(c *conn, _ *command, args [][]byte) error {
	key, pivot, val := args[1], args[3], args[4]
	var after bool
	switch {
	case is(args[2], "AFTER"):
		after = true
	case is(args[2], "BEFORE"):
	default:
		return redisError(msgSyntax)
	}
	var n int64
	if err := c.editCollEvent(key, typeList, "linsert", func(m *collMeta, existed bool) error {
		if !existed {
			return nil
		}
		at := int64(-1)
		if err := c.s.ks.listScan(c.reader(), key, *m, 0, m.count-1, false, func(i int64, v []byte) bool {
			if bytes.Equal(v, pivot) {
				at = i
				return false
			}
			return true
		}); err != nil {
			return err
		}
		if at < 0 {
			n = -1
			return nil
		}
		if after {
			at++
		}
		if err := checkListElem(key, val); err != nil {
			return err
		}
		if err := c.s.ks.listInsert(c.reader(), c.batch, &c.elemBuf, key, m, at, val); err != nil {
			return err
		}
		n = m.count
		return nil
	}); err != nil {
		return err
	}
	c.wr.Int(n)
	return nil
}

func cmdLRem(c *conn, _ *command, args [][]byte) error {
	key, val := args[1], args[3]
	count, ok := parseInt(args[2])
	if !ok {
		return redisError(msgNotInteger)
	}
	var removed int64
	if err := c.editCollEvent(key, typeList, "lrem", func(m *collMeta, existed bool) error {
		if !existed {
			return nil
		}
		// In uint64 so that -(-2^63) is 2^63, not -2^63 again: Redis
		// removes every match then.
		limit := uint64(count)
		if count < 0 {
			limit = -limit
		}
		var rm []int64
		if err := c.s.ks.listScan(c.reader(), key, *m, 0, m.count-1, count < 0, func(i int64, v []byte) bool {
			if bytes.Equal(v, val) {
				rm = append(rm, i)
			}
			return limit == 0 || uint64(len(rm)) < limit
		}); err != nil {
			return err
		}
		if len(rm) == 0 {
			return nil
		}
		if count < 0 {
			slices.Reverse(rm)
		}
		removed = int64(len(rm))
		return c.s.ks.listRemove(c.reader(), c.batch, &c.elemBuf, key, m, rm)
	}); err != nil {
		return err
	}
	c.wr.Int(removed)
	return nil
}

func cmdLTrim(c *conn, _ *command, args [][]byte) error {
	start, end, err := parseRange(args[2], args[3])
	if err != nil {
		return err
	}
	key := args[1]
	// Redis fires ltrim for any list, trimmed or not.
	var existed, emptied bool
	if err := c.editColl(key, typeList, func(m *collMeta, exists bool) error {
		if existed = exists; !exists {
			return nil
		}
		// Redis counts LTRIM of a list as a change even when it keeps
		// every element: WATCH sees it.
		c.touchWatched(key)
		from, to, empty := listRange(start, end, m.count)
		if empty {
			from, to = m.count, m.count-1
		}
		// Deleting needs no reads: the slots are known.
		c.s.ks.listDelete(c.batch, &c.elemBuf, key, *m, 0, from)
		c.s.ks.listDelete(c.batch, &c.elemBuf, key, *m, to+1, m.count)
		m.head += from
		m.count = to + 1 - from
		emptied = m.count == 0
		return nil
	}); err != nil {
		return err
	}
	if existed {
		c.notifyEdit(typeList, "ltrim", key, false, emptied)
	}
	c.ok()
	return nil
}

// cmdLPos implements LPOS key element [RANK rank] [COUNT n] [MAXLEN len],
// which scans from the head (or the tail for a negative rank) and stops
// at the matches it needs or after MAXLEN elements.
func cmdLPos(c *conn, _ *command, args [][]byte) error {
	key, val := args[1], args[2]
	rank, count, maxLen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		var ok bool
		switch {
		case is(args[j], "RANK") && more:
			j++
			if rank, ok = parseInt(args[j]); !ok {
				return redisError(msgNotInteger)
			}
			if rank == math.MinInt64 {
				return redisError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			}
			if rank == 0 {
				return redisError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
			}
		case is(args[j], "COUNT") && more:
			j++
			if count, ok = parseInt(args[j]); !ok || count < 0 {
				return redisError("ERR COUNT can't be negative")
			}
		case is(args[j], "MAXLEN") && more:
			j++
			if maxLen, ok = parseInt(args[j]); !ok || maxLen < 0 {
				return redisError("ERR MAXLEN can't be negative")
			}
		default:
			return redisError(msgSyntax)
		}
	}
	defer c.pin()()
	m, exists, err := c.getColl(key, typeList)
	if err != nil {
		return err
	}
	c.countLookup(key, exists)
	if !exists {
		if count >= 0 {
			c.wr.ArrayHeader(0)
		} else {
			c.wr.Null()
		}
		return nil
	}
	reverse := rank < 0
	if reverse {
		rank = -rank
	}
	from, to := int64(0), m.count-1
	if maxLen > 0 && maxLen < m.count {
		if reverse {
			from = m.count - maxLen
		} else {
			to = maxLen - 1
		}
	}
	var found []int64
	matches := int64(0)
	if err := c.s.ks.listScan(c.reader(), key, m, from, to, reverse, func(i int64, v []byte) bool {
		if !bytes.Equal(v, val) {
			return true
		}
		matches++
		if matches < rank {
			return true
		}
		found = append(found, i)
		// COUNT 0 asks for every match; no COUNT for the first.
		return count == 0 || count > 0 && int64(len(found)) < count
	}); err != nil {
		return err
	}
	switch {
	case count >= 0:
		c.wr.ArrayHeader(len(found))
		for _, i := range found {
			c.wr.Int(i)
		}
	case len(found) > 0:
		c.wr.Int(found[0])
	default:
		c.wr.Null()
	}
	return nil
}

// parseWhere parses LEFT or RIGHT, replying on error.
func parseWhere(arg []byte) (left bool, err error) {
	switch {
	case is(arg, "LEFT"):
		return true, nil
	case is(arg, "RIGHT"):
		return false, nil
	}
	return false, redisError(msgSyntax)
}

// listMove pops an element from src's head (fromLeft) or tail and pushes
// it onto dst's head (toLeft) or tail, in one batch, and replies with it.
// It returns false without replying when src is empty, or, with quiet,
// when src is not a list: a blocked client's try (see blocking.go).
func (c *conn) listMove(src, dst []byte, fromLeft, toLeft, quiet bool) bool {
	held := c.lock([][]byte{src, dst}, 1)
	defer c.unlock(held)
	sm, exists, err := c.s.ks.getColl(c.reader(), &c.scratch, src, typeList)
	switch {
	case quiet && errors.Is(err, errWrongType):
		return false
	case err != nil:
		c.replyErr(err)
		return true
	case !exists:
		return false
	}
	same := bytes.Equal(src, dst)
	dm, dstExists := sm, true
	if !same {
		if dm, dstExists, err = c.getColl(dst, typeList); err != nil {
			c.replyErr(err)
			return true
		}
		if !dstExists {
			if dm, err = c.s.ks.newColl(c.scratch.ns, typeList); err != nil {
				c.replyErr(err)
				return true
			}
		}
	}
	vals, err := c.s.ks.listPopN(c.reader(), c.batch, &c.elemBuf, src, &sm, fromLeft, 1)
	if err != nil {
		c.batch.Reset()
		c.replyErr(err)
		return true
	}
	if same {
		dm = sm
	} else {
		c.s.ks.putColl(c.batch, &c.scratch, src, sm)
	}
	c.s.ks.listPush(c.batch, &c.elemBuf, dst, &dm, toLeft, vals[0])
	c.s.ks.putColl(c.batch, &c.scratch, dst, dm)
	if err := c.commit(); err != nil {
		c.replyErr(err)
		return true
	}
	c.signalReady(dst)
	// Redis' order: the push, then the pop.
	c.notifyEdit(typeList, sideEvent(toLeft, "push"), dst, !dstExists, false)
	c.notifyEdit(typeList, sideEvent(fromLeft, "pop"), src, false, !same && sm.count == 0)
	c.wr.Bulk(vals[0])
	return true
}

// sideEvent names a list event by its end: "lpush" or "rpush" for op
// "push", "lpop" or "rpop" for "pop".
func sideEvent(left bool, op string) string {
	switch {
	case left && op == "push":
		return "lpush"
	case op == "push":
		return "rpush"
	case left:
		return "lpop"
	}
	return "rpop"
}

// lmove returns the handler of LMOVE, or with block of BLMOVE.
func lmove(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		fromLeft, err := parseWhere(args[3])
		if err != nil {
			return err
		}
		toLeft, err := parseWhere(args[4])
		if err != nil {
			return err
		}
		return c.moveCommand(args[1], args[2], fromLeft, toLeft, block, args[len(args)-1])
	}
}

// rpoplpush returns the handler of RPOPLPUSH, or with block of
// BRPOPLPUSH.
func rpoplpush(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		return c.moveCommand(args[1], args[2], false, true, block, args[len(args)-1])
	}
}

// moveCommand runs LMOVE, or when block BLMOVE with the timeout argument.
func (c *conn) moveCommand(src, dst []byte, fromLeft, toLeft, block bool, timeoutArg []byte) error {
	if !block {
		if !c.listMove(src, dst, fromLeft, toLeft, false) {
			c.wr.Null()
		}
		return nil
	}
	timeout, err := parseTimeout(timeoutArg)
	if err != nil {
		return err
	}
	c.blockingCommand([][]byte{src}, timeout, func(key []byte) bool {
		return c.listMove(src, dst, fromLeft, toLeft, key != nil)
	}, func() {
		// Redis' timeout reply is a null array; inside EXEC the command
		// runs as LMOVE and answers as LMOVE does.
		if c.mayBlock() {
			c.wr.NullArray()
		} else {
			c.wr.Null()
		}
	})
	return nil
}

// popFirst pops from the first non-empty list among keys (only from key
// when it is not nil): one element replied as [key, element] when count is
// 0 (BLPOP), else up to count as [key, [elements]] (LMPOP). It returns
// false without replying when every list is empty, or, with a key, when it
// is not a list: a blocked client's try (see blocking.go).
func (c *conn) popFirst(keys [][]byte, key []byte, left bool, count int64) bool {
	return c.firstColl(keys, key, typeList, func(k []byte, m collMeta) {
		vals, err := c.s.ks.listPopN(c.reader(), c.batch, &c.elemBuf, k, &m, left, max(count, 1))
		if err != nil {
			c.batch.Reset()
			c.replyErr(err)
			return
		}
		c.s.ks.putColl(c.batch, &c.scratch, k, m)
		if err := c.commit(); err != nil {
			c.replyErr(err)
			return
		}
		c.notifyEdit(typeList, sideEvent(left, "pop"), k, false, m.count == 0)
		c.wr.ArrayHeader(2)
		c.wr.Bulk(k)
		if count == 0 {
			c.wr.Bulk(vals[0])
		} else {
			c.bulks(vals)
		}
	})
}

// bpop returns the handler of BLPOP (left) or BRPOP.
func bpop(left bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		timeout, err := parseTimeout(args[len(args)-1])
		if err != nil {
			return err
		}
		keys := args[1 : len(args)-1]
		c.blockingCommand(keys, timeout, func(key []byte) bool {
			return c.popFirst(keys, key, left, 0)
		}, c.wr.NullArray)
		return nil
	}
}

// mpop returns the handler of LMPOP numkeys key … LEFT|RIGHT [COUNT n],
// or with block of BLMPOP timeout numkeys ….
func mpop(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		at := 1
		if block {
			at = 2
		}
		numKeys, ok := parseInt(args[at])
		if !ok || numKeys < 1 {
			return redisError("ERR numkeys should be greater than 0")
		}
		if numKeys >= int64(len(args)-at-1) {
			return redisError(msgSyntax)
		}
		keys := args[at+1 : at+1+int(numKeys)]
		rest := args[at+1+int(numKeys):]
		left, err := parseWhere(rest[0])
		if err != nil {
			return err
		}
		count := int64(-1)
		for j := 1; j < len(rest); j++ {
			if count != -1 || !is(rest[j], "COUNT") || j+1 == len(rest) {
				return redisError(msgSyntax)
			}
			j++
			if count, ok = parseInt(rest[j]); !ok || count < 1 {
				return redisError("ERR count should be greater than 0")
			}
		}
		count = max(count, 1)
		if !block {
			if !c.popFirst(keys, nil, left, count) {
				c.wr.NullArray()
			}
			return nil
		}
		timeout, err := parseTimeout(args[1])
		if err != nil {
			return err
		}
		c.blockingCommand(keys, timeout, func(key []byte) bool {
			return c.popFirst(keys, key, left, count)
		}, c.wr.NullArray)
		return nil
	}
}
