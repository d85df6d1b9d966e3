package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/lsmgo-dev/lsmgo"
)

// Lists are collections (collection.go) whose elements sit in numbered
// slots: slot s of the list version v at key is the engine entry
//
//	'e' + len(key) (4, BE) + key + v (8, BE) + (s XOR 1<<63) (8, BE)  →  the element
//
// so the engine's key order is slot order, and slot order is list order.
// The metadata adds the slot of the first element (head, signed) to the
// version and count: the list is slots head … head+count-1. LPUSH writes
// slot head-1 and RPUSH slot head+count, LPOP and RPOP delete an end slot:
// one metadata read, one element write or delete, whatever the length.
// LINDEX and LSET are one point access; LRANGE iterates only the slots it
// returns. Inserting or removing in the middle (LINSERT, LREM) moves the
// elements of the shorter side of the change one slot (or, for LREM, as
// many slots as were removed on that side), so it costs O(min(p, n-p))
// element rewrites for position p in a list of n, all in the command's
// one batch; Redis' own LINSERT and LREM are O(n) too.

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

// slotKey appends to dst the engine key of slot of the list m at key.
func slotKey(dst, key []byte, m collMeta, slot int64) []byte {
	dst = elemsKey(dst, key, m.version)
	return binary.BigEndian.AppendUint64(dst, uint64(slot)^1<<63)
}

// listElemFits reports whether val may be a list element at key, replying
// when it may not.
func (c *conn) listElemFits(key, val []byte) bool {
	if int64(len(val))+8 > maxElem(key) {
		c.fail(msgStringTooBig)
		return false
	}
	return true
}

// listPut adds to c.batch the write of val at offset i of the list m.
func (c *conn) listPut(key []byte, m collMeta, i int64, val []byte) {
	c.elemBuf = slotKey(c.elemBuf, key, m, m.head+i)
	c.batch.Set(c.elemBuf, val)
}

// listDelete adds to c.batch the deletion of offsets [from, to) of m.
func (c *conn) listDelete(key []byte, m collMeta, from, to int64) {
	for i := from; i < to; i++ {
		c.elemBuf = slotKey(c.elemBuf, key, m, m.head+i)
		c.batch.Delete(c.elemBuf)
	}
}

// listPush adds val at the head (left) or tail of m.
func (c *conn) listPush(key []byte, m *collMeta, left bool, val []byte) {
	if left {
		m.head--
		c.listPut(key, *m, 0, val)
	} else {
		c.listPut(key, *m, m.count, val)
	}
	m.count++
}

// errMissingElem reports a slot the metadata counts but the engine lacks.
func errMissingElem(key []byte, i int64) error {
	return &lsmgo.CorruptionError{File: fmt.Sprintf("key %q", key), Offset: -1,
		Reason: fmt.Sprintf("list element at index %d is missing", i)}
}

// listGet reads offset i of m through the command's reader, replying on
// failure.
func (c *conn) listGet(key []byte, m collMeta, i int64) ([]byte, bool) {
	c.elemBuf = slotKey(c.elemBuf, key, m, m.head+i)
	val, err := c.reader().Get(c.elemBuf)
	if errors.Is(err, lsmgo.ErrNotFound) {
		err = errMissingElem(key, i)
	}
	if err != nil {
		c.replyErr(err)
		return nil, false
	}
	return val, true
}

// listScan calls fn with the offsets from … to (inclusive, within the
// list) of m and their elements, read through the command's reader, in
// order or in reverse, until fn returns false. The element is valid only
// during the call. It replies on failure, a missing element included.
func (c *conn) listScan(key []byte, m collMeta, from, to int64, reverse bool, fn func(i int64, val []byte) bool) bool {
	lower := slotKey(nil, key, m, m.head+from)
	upper := slotKey(nil, key, m, m.head+to+1)
	it, err := c.reader().NewIter(&lsmgo.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		c.replyErr(err)
		return false
	}
	want, step, valid, advance := from, int64(1), it.First(), it.Next
	if reverse {
		want, step, valid, advance = to, -1, it.Last(), it.Prev
	}
	prefix := len(lower) - 8
	for ; valid; valid = advance() {
		slot := int64(binary.BigEndian.Uint64(it.Key()[prefix:])^1<<63) - m.head
		if slot != want {
			break
		}
		if !fn(slot, it.Value()) {
			return c.closeIter(it, nil)
		}
		want += step
	}
	var missing error
	if (!reverse && want <= to) || (reverse && want >= from) {
		missing = errMissingElem(key, want)
	}
	return c.closeIter(it, missing)
}

// closeIter closes it and replies with the first error among it's, the
// close's and err.
func (c *conn) closeIter(it *lsmgo.Iterator, err error) bool {
	if ierr := it.Error(); ierr != nil {
		err = ierr
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.replyErr(err)
		return false
	}
	return true
}

// listPopN removes up to n elements from the head (left) or tail of m and
// returns them in pop order, replying on failure.
func (c *conn) listPopN(key []byte, m *collMeta, left bool, n int64) ([][]byte, bool) {
	n = min(n, m.count)
	vals := make([][]byte, 0, n)
	from, to := int64(0), n-1
	if !left {
		from, to = m.count-n, m.count-1
	}
	if n == 1 {
		v, ok := c.listGet(key, *m, from)
		if !ok {
			return nil, false
		}
		vals = append(vals, v)
	} else if !c.listScan(key, *m, from, to, !left, func(_ int64, val []byte) bool {
		vals = append(vals, bytes.Clone(val))
		return true
	}) {
		return nil, false
	}
	c.listDelete(key, *m, from, to+1)
	if left {
		m.head += n
	}
	m.count -= n
	return vals, true
}

// push returns the handler of LPUSH (left) or RPUSH, or with existing of
// LPUSHX or RPUSHX, which push only onto an existing list.
func push(left, existing bool) handler {
	return func(c *conn, _ *command, args [][]byte) {
		key := args[1]
		for _, v := range args[2:] {
			if !c.listElemFits(key, v) {
				return
			}
		}
		var n int64
		if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
			if existed || !existing {
				for _, v := range args[2:] {
					c.listPush(key, m, left, v)
				}
				n = m.count
			}
			return true
		}) {
			return
		}
		if n > 0 {
			c.signalReady(key)
		}
		c.wr.Int(n)
	}
}

// pop returns the handler of LPOP (left) or RPOP, with an optional count.
func pop(left bool) handler {
	return func(c *conn, cmd *command, args [][]byte) {
		if len(args) > 3 {
			c.fail(wrongArity(cmd))
			return
		}
		count := int64(1)
		if len(args) == 3 {
			var ok bool
			if count, ok = parseInt(args[2]); !ok || count < 0 {
				c.fail(msgMustBePositve)
				return
			}
		}
		key := args[1]
		var vals [][]byte
		var exists bool
		if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
			exists = existed
			if !existed || count == 0 {
				return true
			}
			var ok bool
			vals, ok = c.listPopN(key, m, left, count)
			return ok
		}) {
			return
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
	}
}

// bulks replies with vals as an array.
func (c *conn) bulks(vals [][]byte) {
	c.wr.ArrayHeader(len(vals))
	for _, v := range vals {
		c.wr.Bulk(v)
	}
}

func cmdLLen(c *conn, _ *command, args [][]byte) {
	if m, _, ok := c.getColl(args[1], typeList); ok {
		c.wr.Int(m.count)
	}
}

// listRange clamps Redis' start and end indexes (negative ones count from
// the end) to the list of n elements; empty is true when nothing is left.
func listRange(start, end, n int64) (from, to int64, empty bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	if start > end || start >= n {
		return 0, 0, true
	}
	return start, min(end, n-1), false
}

// parseRange parses LRANGE's and LTRIM's start and end, replying on
// error.
func (c *conn) parseRange(startArg, endArg []byte) (start, end int64, ok bool) {
	start, ok1 := parseInt(startArg)
	end, ok2 := parseInt(endArg)
	if !ok1 || !ok2 {
		c.fail(msgNotInteger)
		return 0, 0, false
	}
	return start, end, true
}

func cmdLRange(c *conn, _ *command, args [][]byte) {
	start, end, ok := c.parseRange(args[2], args[3])
	if !ok {
		return
	}
	key := args[1]
	defer c.pin()()
	m, exists, ok := c.getColl(key, typeList)
	if !ok {
		return
	}
	c.countLookup(exists)
	from, to, empty := listRange(start, end, m.count)
	if empty {
		c.wr.ArrayHeader(0)
		return
	}
	// Streamed: a range bigger than memory goes out as it is read. A
	// failure after the header cannot be a reply any more; the
	// connection closes instead.
	c.wr.ArrayHeader(int(to - from + 1))
	if !c.listScan(key, m, from, to, false, func(_ int64, val []byte) bool {
		c.wr.Bulk(val)
		return true
	}) {
		c.quit = true
	}
}

func cmdLIndex(c *conn, _ *command, args [][]byte) {
	key := args[1]
	m, exists, ok := c.getColl(key, typeList)
	if !ok {
		return
	}
	c.countLookup(exists)
	if !exists {
		c.wr.Null()
		return
	}
	i, ok := parseInt(args[2])
	if !ok {
		c.fail(msgNotInteger)
		return
	}
	if i < 0 {
		i += m.count
	}
	if i < 0 || i >= m.count {
		c.wr.Null()
		return
	}
	if val, ok := c.listGet(key, m, i); ok {
		c.wr.Bulk(val)
	}
}

func cmdLSet(c *conn, _ *command, args [][]byte) {
	key, val := args[1], args[3]
	if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
		if !existed {
			c.fail(msgNoSuchKey)
			return false
		}
		i, ok := parseInt(args[2])
		if !ok {
			c.fail(msgNotInteger)
			return false
		}
		if i < 0 {
			i += m.count
		}
		if i < 0 || i >= m.count {
			c.fail(msgOutOfRange)
			return false
		}
		if !c.listElemFits(key, val) {
			return false
		}
		c.listPut(key, *m, i, val)
		return true
	}) {
		return
	}
	c.ok()
}

// listInsert inserts val at offset i of m (0 ≤ i ≤ count), moving the
// shorter side of the list one slot outwards.
func (c *conn) listInsert(key []byte, m *collMeta, i int64, val []byte) bool {
	if i <= m.count-i {
		// Offsets 0 … i-1 move one slot left, into a new head.
		moved := *m
		moved.head--
		if i > 0 && !c.listScan(key, *m, 0, i-1, false, func(j int64, v []byte) bool {
			c.listPut(key, moved, j, v)
			return true
		}) {
			return false
		}
		*m = moved
	} else if !c.listScan(key, *m, i, m.count-1, false, func(j int64, v []byte) bool {
		c.listPut(key, *m, j+1, v)
		return true
	}) {
		return false
	}
	c.listPut(key, *m, i, val)
	m.count++
	return true
}

func cmdLInsert(c *conn, _ *command, args [][]byte) {
	key, pivot, val := args[1], args[3], args[4]
	var after bool
	switch {
	case is(args[2], "AFTER"):
		after = true
	case is(args[2], "BEFORE"):
	default:
		c.fail(msgSyntax)
		return
	}
	var n int64
	if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
		if !existed {
			return true
		}
		at := int64(-1)
		if !c.listScan(key, *m, 0, m.count-1, false, func(i int64, v []byte) bool {
			if bytes.Equal(v, pivot) {
				at = i
				return false
			}
			return true
		}) {
			return false
		}
		if at < 0 {
			n = -1
			return true
		}
		if after {
			at++
		}
		if !c.listElemFits(key, val) || !c.listInsert(key, m, at, val) {
			return false
		}
		n = m.count
		return true
	}) {
		return
	}
	c.wr.Int(n)
}

// listRemove removes the offsets in rm (ascending) from m, closing the
// gaps from the side that moves fewer elements: either the elements after
// the first removed one move left, or those before the last one move
// right.
func (c *conn) listRemove(key []byte, m *collMeta, rm []int64) bool {
	k := int64(len(rm))
	first, last := rm[0], rm[k-1]
	if m.count-first-k <= last+1-k {
		gap := int64(0)
		if !c.listScan(key, *m, first, m.count-1, false, func(i int64, v []byte) bool {
			if gap < k && rm[gap] == i {
				gap++
			} else {
				c.listPut(key, *m, i-gap, v)
			}
			return true
		}) {
			return false
		}
		c.listDelete(key, *m, m.count-k, m.count)
	} else {
		gap := int64(0)
		if !c.listScan(key, *m, 0, last, true, func(i int64, v []byte) bool {
			if gap < k && rm[k-1-gap] == i {
				gap++
			} else {
				c.listPut(key, *m, i+gap, v)
			}
			return true
		}) {
			return false
		}
		c.listDelete(key, *m, 0, k)
		m.head += k
	}
	m.count -= k
	return true
}

func cmdLRem(c *conn, _ *command, args [][]byte) {
	key, val := args[1], args[3]
	count, ok := parseInt(args[2])
	if !ok {
		c.fail(msgNotInteger)
		return
	}
	var removed int64
	if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
		if !existed {
			return true
		}
		// In uint64 so that -(-2^63) is 2^63, not -2^63 again: Redis
		// removes every match then.
		limit := uint64(count)
		if count < 0 {
			limit = -limit
		}
		var rm []int64
		if !c.listScan(key, *m, 0, m.count-1, count < 0, func(i int64, v []byte) bool {
			if bytes.Equal(v, val) {
				rm = append(rm, i)
			}
			return limit == 0 || uint64(len(rm)) < limit
		}) {
			return false
		}
		if len(rm) == 0 {
			return true
		}
		if count < 0 {
			for i, j := 0, len(rm)-1; i < j; i, j = i+1, j-1 {
				rm[i], rm[j] = rm[j], rm[i]
			}
		}
		removed = int64(len(rm))
		return c.listRemove(key, m, rm)
	}) {
		return
	}
	c.wr.Int(removed)
}

func cmdLTrim(c *conn, _ *command, args [][]byte) {
	start, end, ok := c.parseRange(args[2], args[3])
	if !ok {
		return
	}
	key := args[1]
	if !c.editColl(key, typeList, func(m *collMeta, existed bool) bool {
		if !existed {
			return true
		}
		from, to, empty := listRange(start, end, m.count)
		if empty {
			from, to = m.count, m.count-1
		}
		// Deleting needs no reads: the slots are known.
		c.listDelete(key, *m, 0, from)
		c.listDelete(key, *m, to+1, m.count)
		m.head += from
		m.count = to + 1 - from
		return true
	}) {
		return
	}
	c.ok()
}

// cmdLPos implements LPOS key element [RANK rank] [COUNT n] [MAXLEN len],
// which scans from the head (or the tail for a negative rank) and stops
// at the matches it needs or after MAXLEN elements.
func cmdLPos(c *conn, _ *command, args [][]byte) {
	key, val := args[1], args[2]
	rank, count, maxLen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		var ok bool
		switch {
		case is(args[j], "RANK") && more:
			j++
			if rank, ok = parseInt(args[j]); !ok {
				c.fail(msgNotInteger)
				return
			}
			if rank == math.MinInt64 {
				c.fail("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
				return
			}
			if rank == 0 {
				c.fail("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
		case is(args[j], "COUNT") && more:
			j++
			if count, ok = parseInt(args[j]); !ok || count < 0 {
				c.fail("ERR COUNT can't be negative")
				return
			}
		case is(args[j], "MAXLEN") && more:
			j++
			if maxLen, ok = parseInt(args[j]); !ok || maxLen < 0 {
				c.fail("ERR MAXLEN can't be negative")
				return
			}
		default:
			c.fail(msgSyntax)
			return
		}
	}
	defer c.pin()()
	m, exists, ok := c.getColl(key, typeList)
	if !ok {
		return
	}
	c.countLookup(exists)
	if !exists {
		if count >= 0 {
			c.wr.ArrayHeader(0)
		} else {
			c.wr.Null()
		}
		return
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
	if !c.listScan(key, m, from, to, reverse, func(i int64, v []byte) bool {
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
	}) {
		return
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
}

// parseWhere parses LEFT or RIGHT, replying on error.
func (c *conn) parseWhere(arg []byte) (left, ok bool) {
	switch {
	case is(arg, "LEFT"):
		return true, true
	case is(arg, "RIGHT"):
		return false, true
	}
	c.fail(msgSyntax)
	return false, false
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
	dm := sm
	if !same {
		var dstExists, ok bool
		if dm, dstExists, ok = c.getColl(dst, typeList); !ok {
			return true
		}
		if !dstExists {
			if dm, err = c.s.ks.newColl(typeList); err != nil {
				c.replyErr(err)
				return true
			}
		}
	}
	vals, ok := c.listPopN(src, &sm, fromLeft, 1)
	if !ok {
		c.batch.Reset()
		return true
	}
	if same {
		dm = sm
	} else {
		c.s.ks.putColl(c.batch, &c.scratch, src, sm)
	}
	c.listPush(dst, &dm, toLeft, vals[0])
	c.s.ks.putColl(c.batch, &c.scratch, dst, dm)
	if c.apply() {
		c.signalReady(dst)
		c.wr.Bulk(vals[0])
	}
	return true
}

// lmove returns the handler of LMOVE, or with block of BLMOVE.
func lmove(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) {
		fromLeft, ok := c.parseWhere(args[3])
		if !ok {
			return
		}
		toLeft, ok := c.parseWhere(args[4])
		if !ok {
			return
		}
		c.moveCommand(args[1], args[2], fromLeft, toLeft, block, args[len(args)-1])
	}
}

// rpoplpush returns the handler of RPOPLPUSH, or with block of
// BRPOPLPUSH.
func rpoplpush(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) {
		c.moveCommand(args[1], args[2], false, true, block, args[len(args)-1])
	}
}

// moveCommand runs LMOVE, or when block BLMOVE with the timeout argument.
func (c *conn) moveCommand(src, dst []byte, fromLeft, toLeft, block bool, timeoutArg []byte) {
	if !block {
		if !c.listMove(src, dst, fromLeft, toLeft, false) {
			c.wr.Null()
		}
		return
	}
	timeout, ok := c.parseTimeout(timeoutArg)
	if !ok {
		return
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
}

// popFirst pops from the first non-empty list among keys (only from key
// when it is not nil): one element replied as [key, element] when count is
// 0 (BLPOP), else up to count as [key, [elements]] (LMPOP). It returns
// false without replying when every list is empty, or, with a key, when it
// is not a list: a blocked client's try (see blocking.go).
func (c *conn) popFirst(keys [][]byte, key []byte, left bool, count int64) bool {
	return c.firstColl(keys, key, typeList, func(k []byte, m collMeta) {
		vals, ok := c.listPopN(k, &m, left, max(count, 1))
		if !ok {
			c.batch.Reset()
			return
		}
		c.s.ks.putColl(c.batch, &c.scratch, k, m)
		if !c.apply() {
			return
		}
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
	return func(c *conn, _ *command, args [][]byte) {
		timeout, ok := c.parseTimeout(args[len(args)-1])
		if !ok {
			return
		}
		keys := args[1 : len(args)-1]
		c.blockingCommand(keys, timeout, func(key []byte) bool {
			return c.popFirst(keys, key, left, 0)
		}, c.wr.NullArray)
	}
}

// mpop returns the handler of LMPOP numkeys key … LEFT|RIGHT [COUNT n],
// or with block of BLMPOP timeout numkeys ….
func mpop(block bool) handler {
	return func(c *conn, _ *command, args [][]byte) {
		at := 1
		if block {
			at = 2
		}
		numKeys, ok := parseInt(args[at])
		if !ok || numKeys < 1 {
			c.fail("ERR numkeys should be greater than 0")
			return
		}
		if numKeys >= int64(len(args)-at-1) {
			c.fail(msgSyntax)
			return
		}
		keys := args[at+1 : at+1+int(numKeys)]
		rest := args[at+1+int(numKeys):]
		left, ok := c.parseWhere(rest[0])
		if !ok {
			return
		}
		count := int64(-1)
		for j := 1; j < len(rest); j++ {
			if count != -1 || !is(rest[j], "COUNT") || j+1 == len(rest) {
				c.fail(msgSyntax)
				return
			}
			j++
			if count, ok = parseInt(rest[j]); !ok || count < 1 {
				c.fail("ERR count should be greater than 0")
				return
			}
		}
		count = max(count, 1)
		if !block {
			if !c.popFirst(keys, nil, left, count) {
				c.wr.NullArray()
			}
			return
		}
		timeout, ok := c.parseTimeout(args[1])
		if !ok {
			return
		}
		c.blockingCommand(keys, timeout, func(key []byte) bool {
			return c.popFirst(keys, key, left, count)
		}, c.wr.NullArray)
	}
}
