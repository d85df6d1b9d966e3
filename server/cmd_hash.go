package server

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
)

func init() {
	const g = "hash"
	rwf, ro, rof := flagWrite|flagDenyOOM|flagFast, flagReadonly, flagReadonly|flagFast
	register(
		spec{name: "hset", arity: -4, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Creates or modifies the value of a field in a hash.", run: hset(false)},
		spec{name: "hmset", arity: -4, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Sets the values of multiple fields.", run: hset(true)},
		spec{name: "hsetnx", arity: 4, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Sets the value of a field in a hash only when the field doesn't exist.", run: cmdHSetNX},
		spec{name: "hget", arity: 3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns the value of a field in a hash.", run: cmdHGet},
		spec{name: "hmget", arity: -3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns the values of all fields in a hash.", run: cmdHMGet},
		spec{name: "hdel", arity: -3, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", run: removeElems(typeHash)},
		spec{name: "hexists", arity: 3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Determines whether a field exists in a hash.", run: cmdHExists},
		spec{name: "hlen", arity: 2, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns the number of fields in a hash.", run: cmdHLen},
		spec{name: "hstrlen", arity: 3, flags: rof, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "3.2.0",
			summary: "Returns the length of the value of a field.", run: cmdHStrlen},
		spec{name: "hgetall", arity: 2, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns all fields and values in a hash.", run: hgetAll(true, true)},
		spec{name: "hkeys", arity: 2, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns all fields in a hash.", run: hgetAll(true, false)},
		spec{name: "hvals", arity: 2, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Returns all values in a hash.", run: hgetAll(false, true)},
		spec{name: "hincrby", arity: 4, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", run: cmdHIncrBy},
		spec{name: "hincrbyfloat", arity: 4, flags: rwf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", run: cmdHIncrByFloat},
		spec{name: "hscan", arity: -3, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.8.0",
			summary: "Iterates over fields and values of a hash.", run: cmdHScan},
		spec{name: "hrandfield", arity: -2, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.2.0",
			summary: "Returns one or more random fields from a hash.", run: cmdHRandField},
	)
}

// getColl reads the metadata of the collection of type typ at key through
// the command's reader, replying with the error itself (WRONGTYPE among
// them) when it fails.
func (c *conn) getColl(key []byte, typ byte) (m collMeta, exists, ok bool) {
	m, exists, err := c.s.ks.getColl(c.reader(), &c.scratch, key, typ)
	if err != nil {
		c.replyErr(err)
		return m, false, false
	}
	return m, exists, true
}

// pin makes the running read command see one engine state through all
// its reads (metadata, then elements), unless it already reads through the
// pipeline's view; the caller defers the returned func. Without a view
// (the DB closing) reads go to the DB.
func (c *conn) pin() func() {
	if c.view != nil || c.inExec() {
		return func() {}
	}
	v, err := c.s.ks.newView()
	if err != nil {
		return func() {}
	}
	c.view = v
	return c.closeView
}

// getElem reads one element of m at key through the command's reader,
// replying with the error itself when the read fails.
func (c *conn) getElem(key []byte, m collMeta, elem []byte) (val []byte, exists, ok bool) {
	val, exists, err := c.s.ks.getElem(c.reader(), &c.elemBuf, key, m, elem)
	if err != nil {
		c.replyErr(err)
		return nil, false, false
	}
	return val, exists, true
}

// editColl runs a write of the collection of type typ at key under the
// key's lock: fn gets the metadata (a new collection's when the key is
// absent), adds its element writes to c.batch and adjusts m.count, or
// replies itself and returns false. editColl then writes the metadata
// (deleting an emptied collection) and commits everything as one batch;
// it reports whether it did, having replied on false.
func (c *conn) editColl(key []byte, typ byte, fn func(m *collMeta, existed bool) bool) bool {
	held := c.lock([][]byte{key}, 1)
	defer c.unlock(held)
	m, exists, ok := c.getColl(key, typ)
	if !ok {
		return false
	}
	if !exists {
		var err error
		if m, err = c.s.ks.newColl(typ); err != nil {
			c.replyErr(err)
			return false
		}
	}
	before := m.count
	if !fn(&m, exists) {
		c.batch.Reset()
		return false
	}
	if m.count == before && c.batch.Count() == 0 {
		return true
	}
	c.s.ks.putColl(c.batch, &c.scratch, key, m)
	return c.apply()
}

// hset returns the handler of HSET, or of HMSET when ok (its reply is +OK
// instead of the count of new fields).
func hset(ok bool) handler {
	return func(c *conn, cmd *command, args [][]byte) {
		if len(args)%2 != 0 {
			c.fail(wrongArity(cmd))
			return
		}
		key := args[1]
		var added int64
		if !c.editColl(key, typeHash, func(m *collMeta, existed bool) bool {
			var fresh map[string]struct{}
			for i := 2; i < len(args); i += 2 {
				field, val := args[i], args[i+1]
				if int64(len(field)+len(val)) > maxElem(key) {
					c.fail(msgStringTooBig)
					return false
				}
				if _, dup := fresh[string(field)]; !dup {
					old := false
					if existed {
						var ok bool
						if _, old, ok = c.getElem(key, *m, field); !ok {
							return false
						}
					}
					if !old {
						if fresh == nil {
							fresh = map[string]struct{}{}
						}
						fresh[string(field)] = struct{}{}
						added++
					}
				}
				c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, field, val)
			}
			m.count += added
			return true
		}) {
			return
		}
		if ok {
			c.ok()
		} else {
			c.wr.Int(added)
		}
	}
}

func cmdHSetNX(c *conn, _ *command, args [][]byte) {
	key, field, val := args[1], args[2], args[3]
	set := false
	if !c.editColl(key, typeHash, func(m *collMeta, existed bool) bool {
		if existed {
			_, old, ok := c.getElem(key, *m, field)
			if !ok {
				return false
			}
			if old {
				return true
			}
		}
		if int64(len(field)+len(val)) > maxElem(key) {
			c.fail(msgStringTooBig)
			return false
		}
		c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, field, val)
		m.count++
		set = true
		return true
	}) {
		return
	}
	if set {
		c.wr.Int(1)
	} else {
		c.wr.Int(0)
	}
}

func cmdHGet(c *conn, _ *command, args [][]byte) {
	m, exists, ok := c.getColl(args[1], typeHash)
	if !ok {
		return
	}
	c.countLookup(exists)
	if !exists {
		c.wr.Null()
		return
	}
	val, found, ok := c.getElem(args[1], m, args[2])
	switch {
	case !ok:
	case found:
		c.wr.Bulk(val)
	default:
		c.wr.Null()
	}
}

func cmdHMGet(c *conn, _ *command, args [][]byte) {
	vals, found, exists, ok := c.getElems(args[1], typeHash, nil, args[2:])
	if !ok {
		return
	}
	c.countLookup(exists)
	c.wr.ArrayHeader(len(vals))
	for i, v := range vals {
		if found[i] {
			c.wr.Bulk(v)
		} else {
			c.wr.Null()
		}
	}
}

// getElems reads the elements named sub+name for each of names from the
// collection of type typ at key (none found when the key is absent). It
// reads every one before the caller replies, so that an engine error is
// the whole reply rather than a broken array; it replies itself on
// failure.
func (c *conn) getElems(key []byte, typ byte, sub []byte, names [][]byte) (vals [][]byte, found []bool, exists, ok bool) {
	m, exists, ok := c.getColl(key, typ)
	if !ok {
		return nil, nil, false, false
	}
	vals, found = make([][]byte, len(names)), make([]bool, len(names))
	if exists {
		elem := slices.Clone(sub)
		for i, name := range names {
			elem = append(elem[:len(sub)], name...)
			if vals[i], found[i], ok = c.getElem(key, m, elem); !ok {
				return nil, nil, false, false
			}
		}
	}
	return vals, found, exists, true
}

// removeElems returns the handler of HDEL or SREM on collections of typ:
// it deletes the distinct elements named after the key and replies with
// how many were there.
func removeElems(typ byte) handler {
	return func(c *conn, _ *command, args [][]byte) {
		key := args[1]
		var removed int64
		if !c.editColl(key, typ, func(m *collMeta, existed bool) bool {
			if !existed {
				return true
			}
			ok := true
			distinct(args[2:], func(elem []byte) {
				var found bool
				if ok {
					_, found, ok = c.getElem(key, *m, elem)
				}
				if found {
					c.s.ks.deleteElem(c.batch, &c.elemBuf, key, *m, elem)
					removed++
				}
			})
			m.count -= removed
			return ok
		}) {
			return
		}
		c.wr.Int(removed)
	}
}

func cmdHExists(c *conn, _ *command, args [][]byte) {
	m, exists, ok := c.getColl(args[1], typeHash)
	if !ok {
		return
	}
	found := false
	if exists {
		if _, found, ok = c.getElem(args[1], m, args[2]); !ok {
			return
		}
	}
	if found {
		c.wr.Int(1)
	} else {
		c.wr.Int(0)
	}
}

func cmdHLen(c *conn, _ *command, args [][]byte) {
	m, _, ok := c.getColl(args[1], typeHash)
	if ok {
		c.wr.Int(m.count)
	}
}

func cmdHStrlen(c *conn, _ *command, args [][]byte) {
	m, exists, ok := c.getColl(args[1], typeHash)
	if !ok {
		return
	}
	var val []byte
	if exists {
		if val, _, ok = c.getElem(args[1], m, args[2]); !ok {
			return
		}
	}
	c.wr.Int(int64(len(val)))
}

// readElems returns every element of m at key and its value, read through
// the command's reader; it replies with the error itself on failure.
func (c *conn) readElems(key []byte, m collMeta) (elems, vals [][]byte, ok bool) {
	return c.readElemsIn(key, m, nil)
}

// readElemsIn is readElems over the elements under sub (scanElemsIn).
func (c *conn) readElemsIn(key []byte, m collMeta, sub []byte) (elems, vals [][]byte, ok bool) {
	err := c.s.ks.scanElemsIn(c.reader(), key, m, sub, nil, func(elem, val []byte) bool {
		elems = append(elems, bytes.Clone(elem))
		vals = append(vals, bytes.Clone(val))
		return true
	})
	if err != nil {
		c.replyErr(err)
		return nil, nil, false
	}
	return elems, vals, true
}

// hgetAll returns the handler of HGETALL (fields and values: a map in
// RESP3), HKEYS (fields) or HVALS (values). The reply lists fields in
// byte order; Redis' order is its hash table's.
func hgetAll(fields, values bool) handler {
	return func(c *conn, _ *command, args [][]byte) {
		defer c.pin()()
		m, exists, ok := c.getColl(args[1], typeHash)
		if !ok {
			return
		}
		var elems, vals [][]byte
		if exists {
			if elems, vals, ok = c.readElems(args[1], m); !ok {
				return
			}
		}
		if fields && values {
			c.wr.MapHeader(len(elems))
		} else {
			c.wr.ArrayHeader(len(elems))
		}
		for i := range elems {
			if fields {
				c.wr.Bulk(elems[i])
			}
			if values {
				c.wr.Bulk(vals[i])
			}
		}
	}
}

// hashIncr runs a read-modify-write of one hash field for HINCRBY and
// HINCRBYFLOAT: fn gets the field's current value (nil when absent) and
// returns the new one, or replies itself and returns nil.
func (c *conn) hashIncr(key, field []byte, fn func(old []byte, found bool) []byte) ([]byte, bool) {
	var result []byte
	ok := c.editColl(key, typeHash, func(m *collMeta, existed bool) bool {
		var old []byte
		found := false
		if existed {
			var ok bool
			if old, found, ok = c.getElem(key, *m, field); !ok {
				return false
			}
		}
		if result = fn(old, found); result == nil {
			return false
		}
		if !found {
			m.count++
		}
		c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, field, result)
		return true
	})
	return result, ok
}

func cmdHIncrBy(c *conn, _ *command, args [][]byte) {
	delta, ok := parseInt(args[3])
	if !ok {
		c.fail(msgNotInteger)
		return
	}
	var n int64
	if _, ok := c.hashIncr(args[1], args[2], func(old []byte, found bool) []byte {
		if found {
			var ok bool
			if n, ok = parseInt(old); !ok {
				c.fail("ERR hash value is not an integer")
				return nil
			}
		}
		if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
			c.fail(msgOverflow)
			return nil
		}
		n += delta
		return strconv.AppendInt(nil, n, 10)
	}); ok {
		c.wr.Int(n)
	}
}

func cmdHIncrByFloat(c *conn, _ *command, args [][]byte) {
	delta, ok := parseLongDouble(args[3])
	if !ok {
		c.fail(msgNotFloat)
		return
	}
	if delta.IsInf() {
		c.fail("ERR value is NaN or Infinity")
		return
	}
	if result, ok := c.hashIncr(args[1], args[2], func(old []byte, found bool) []byte {
		cur := new(big.Float)
		if found {
			var ok bool
			if cur, ok = parseLongDouble(old); !ok {
				c.fail("ERR hash value is not a float")
				return nil
			}
		}
		sum, ok := addLongDouble(cur, delta)
		if !ok {
			c.fail("ERR increment would produce NaN or Infinity")
			return nil
		}
		return []byte(sum)
	}); ok {
		c.wr.Bulk(result)
	}
}

// scanOpts are the parsed options of HSCAN and SSCAN.
type scanOpts struct {
	pattern []byte
	count   int64
}

// parseScanOpts parses [MATCH pattern] [COUNT n] with Redis' errors.
func (c *conn) parseScanOpts(opts [][]byte) (o scanOpts, ok bool) {
	o.count = 10
	for i := 0; i < len(opts); i++ {
		switch a := opts[i]; {
		case i+1 < len(opts) && is(a, "MATCH"):
			o.pattern = opts[i+1]
			i++
		case i+1 < len(opts) && is(a, "COUNT"):
			n, ok := parseInt(opts[i+1])
			if !ok {
				c.fail(msgNotInteger)
				return o, false
			}
			if n < 1 {
				c.fail(msgSyntax)
				return o, false
			}
			o.count = n
			i++
		default:
			c.fail(msgSyntax)
			return o, false
		}
	}
	return o, true
}

// scanColl implements HSCAN, SSCAN and ZSCAN: it examines up to COUNT
// elements under sub of the collection from where the cursor left off,
// and replies with the next cursor and the matching elements, each
// followed by its value as value prints it unless value is nil (SSCAN).
// Cursors are server-side positions, as for SCAN.
func (c *conn) scanColl(args [][]byte, typ byte, sub []byte, value func(dst, val []byte) []byte) {
	cursor, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		c.fail("ERR invalid cursor")
		return
	}
	key := args[1]
	defer c.pin()()
	m, exists, ok := c.getColl(key, typ)
	if !ok {
		return
	}
	if !exists {
		// As in Redis, a missing key answers before the options are
		// parsed.
		c.wr.ArrayHeader(2)
		c.wr.BulkString("0")
		c.wr.ArrayHeader(0)
		return
	}
	o, ok := c.parseScanOpts(args[3:])
	if !ok {
		return
	}
	var from []byte
	if cursor != 0 {
		if from, ok = c.s.cursors.get(cursor); !ok {
			c.fail("ERR invalid cursor")
			return
		}
	}
	var elems, vals [][]byte
	if m.count <= smallColl {
		o.count = smallColl
	}
	var next []byte
	examined := int64(0)
	err = c.s.ks.scanElemsIn(c.reader(), key, m, sub, from, func(elem, val []byte) bool {
		if examined == o.count {
			next = bytes.Clone(elem)
			return false
		}
		examined++
		if o.pattern == nil || globMatch(o.pattern, elem, false) {
			elems = append(elems, bytes.Clone(elem))
			if value != nil {
				vals = append(vals, value(nil, val))
			}
		}
		return true
	})
	if err != nil {
		c.replyErr(err)
		return
	}
	c.wr.ArrayHeader(2)
	if next == nil {
		c.wr.BulkString("0")
	} else {
		c.wr.BulkString(strconv.FormatUint(c.s.cursors.put(next), 10))
	}
	c.wr.ArrayHeader(len(elems) + len(vals))
	for i := range elems {
		c.wr.Bulk(elems[i])
		if value != nil {
			c.wr.Bulk(vals[i])
		}
	}
}

// smallColl is the size up to which HSCAN and SSCAN return a whole
// collection in one call whatever COUNT says, as Redis does for its
// compact encodings (hash-max-listpack-entries, set-max-intset-entries
// are 128 by default and 512): clients then need one round trip, and
// the replies match Redis'.
const smallColl = 128

func cmdHScan(c *conn, _ *command, args [][]byte) {
	c.scanColl(args, typeHash, nil, func(dst, val []byte) []byte { return append(dst, val...) })
}

// maxRandCount is the largest |count| HRANDFIELD and SRANDMEMBER accept,
// as in Redis, which refuses counts whose doubling could overflow.
const maxRandCount = math.MaxInt64 / 2

// randCount parses the count of HRANDFIELD or SRANDMEMBER, answering the
// error Redis gives for a bad one.
func (c *conn) randCount(arg []byte) (int64, bool) {
	count, ok := parseInt(arg)
	switch {
	case !ok:
		c.fail(msgNotInteger)
	case count < -maxRandCount || count > maxRandCount:
		c.fail("ERR value is out of range")
		ok = false
	}
	return count, ok
}

// cmdHRandField implements HRANDFIELD key [count [WITHVALUES]]. Picking
// needs the elements' positions, which an LSM tree does not index: see
// pickElems for when it seeks and when it makes one pass over the hash.
func cmdHRandField(c *conn, _ *command, args [][]byte) {
	if len(args) > 4 || len(args) == 4 && !is(args[3], "WITHVALUES") {
		c.fail(msgSyntax)
		return
	}
	key := args[1]
	var count int64
	if len(args) >= 3 {
		var ok bool
		if count, ok = c.randCount(args[2]); !ok {
			return
		}
	}
	elems, vals, ok := c.randomElems(key, typeHash, nil, len(args) == 2, count)
	if !ok {
		return
	}
	withValues := len(args) == 4
	if withValues && c.wr.Protocol() == 3 {
		c.wr.ArrayHeader(len(elems))
		for i := range elems {
			c.wr.ArrayHeader(2)
			c.wr.Bulk(elems[i])
			c.wr.Bulk(vals[i])
		}
		return
	}
	if withValues {
		c.wr.ArrayHeader(2 * len(elems))
	} else {
		c.wr.ArrayHeader(len(elems))
	}
	for i := range elems {
		c.wr.Bulk(elems[i])
		if withValues {
			c.wr.Bulk(vals[i])
		}
	}
}

// randomElems is the common part of HRANDFIELD, SRANDMEMBER and
// ZRANDMEMBER once their count is parsed (single: none was given): it
// replies itself for a missing key (null, or with a count an empty
// array), a zero count, a failure, and without a count with the one
// element picked; otherwise it returns the picks for the caller's reply.
func (c *conn) randomElems(key []byte, typ byte, sub []byte, single bool, count int64) (elems, vals [][]byte, ok bool) {
	defer c.pin()()
	m, exists, ok := c.getColl(key, typ)
	switch {
	case !ok:
		return nil, nil, false
	case single && !exists:
		c.wr.Null()
		return nil, nil, false
	case !single && (!exists || count == 0):
		c.wr.ArrayHeader(0)
		return nil, nil, false
	case single:
		count = 1
	}
	elems, vals, ok = c.pickElems(key, m, sub, count)
	if ok && single {
		c.wr.Bulk(elems[0])
		return nil, nil, false
	}
	return elems, vals, ok
}

// pickElems picks random elements under sub of m at key: count > 0
// distinct ones (all when count ≥ the collection's size), or -count with
// repetition. The picks come in random order. A few picks out of many are
// made by seeking (keyspace.randomElem); more are made in one pass over
// the elements.
func (c *conn) pickElems(key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, ok bool) {
	if count >= m.count {
		if elems, vals, ok = c.readElemsIn(key, m, sub); ok {
			shuffle(elems, vals)
		}
		return elems, vals, ok
	}
	if n := max(count, -count); m.count >= seekMinSize && n*seekPicks <= m.count {
		return c.seekElems(key, m, sub, count)
	}
	return c.passElems(key, m, sub, count)
}

// passElems makes pickElems' picks in one pass over the elements: random
// positions first, then the elements at them.
func (c *conn) passElems(key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, ok bool) {
	positions := randomPositions(m.count, count)
	pos := int64(0)
	err := c.s.ks.scanElemsIn(c.reader(), key, m, sub, nil, func(elem, val []byte) bool {
		for len(positions) > 0 && positions[0] == pos {
			elems = append(elems, bytes.Clone(elem))
			vals = append(vals, bytes.Clone(val))
			positions = positions[1:]
		}
		pos++
		return len(positions) > 0
	})
	if err != nil {
		c.replyErr(err)
		return nil, nil, false
	}
	shuffle(elems, vals)
	return elems, vals, true
}

// Picks are made by seeking in a collection of at least seekMinSize
// elements holding seekPicks elements or more per pick: a pick then costs
// a few seeks where a pass costs a step per element. Smaller collections
// get exactly uniform picks from a pass; seeking is uniform only for
// element names spread evenly over their bytes (see randomElem).
const (
	seekMinSize = 1024
	seekPicks   = 64
)

// seekElems picks count elements by seeking: -count with repetition, or
// count distinct ones, redrawing a repeat (count is small against the
// collection's size, so repeats are rare unless the element names make
// the picks very uneven: after many redraws it gives up and makes the
// picks in one pass).
func (c *conn) seekElems(key []byte, m collMeta, sub []byte, count int64) (elems, vals [][]byte, ok bool) {
	r := c.reader()
	var seen map[string]bool
	if count > 0 {
		seen = make(map[string]bool, count)
	}
	for n, draws := max(count, -count), int64(0); int64(len(elems)) < n; draws++ {
		if draws > 4*n+16 {
			return c.passElems(key, m, sub, count)
		}
		elem, val, err := c.s.ks.randomElem(r, key, m, sub)
		if err != nil {
			c.replyErr(err)
			return nil, nil, false
		}
		if seen != nil {
			if seen[string(elem)] {
				continue
			}
			seen[string(elem)] = true
		}
		elems, vals = append(elems, elem), append(vals, val)
	}
	return elems, vals, true
}

// randomPositions returns, sorted, -count positions below n drawn with
// repetition when count < 0, or count distinct ones (count < n) drawn by
// Floyd's method, which needs memory for the picks only.
func randomPositions(n, count int64) []int64 {
	var positions []int64
	if count < 0 {
		positions = make([]int64, -count)
		for i := range positions {
			positions[i] = rand.Int64N(n)
		}
	} else {
		picked := make(map[int64]struct{}, count)
		for j := n - count; j < n; j++ {
			t := rand.Int64N(j + 1)
			if _, dup := picked[t]; dup {
				t = j
			}
			picked[t] = struct{}{}
			positions = append(positions, t)
		}
	}
	slices.Sort(positions)
	return positions
}

func shuffle(elems, vals [][]byte) {
	rand.Shuffle(len(elems), func(i, j int) {
		elems[i], elems[j] = elems[j], elems[i]
		vals[i], vals[j] = vals[j], vals[i]
	})
}
