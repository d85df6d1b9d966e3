package server

import "math"

// Command parts shared by the collection types' commands (hashes, sets,
// sorted sets): several elements read at once, removal of named
// elements, and random picks.

// getElems reads the elements named sub+name for each of names from the
// collection of type typ at key (none found when the key is absent), all
// from one state (pointread.go). It reads every one before the caller
// replies, so that an engine error is the whole reply rather than a
// broken array.
func (c *conn) getElems(key []byte, typ byte, sub []byte, names [][]byte) (vals [][]byte, found []bool, exists bool, err error) {
	if len(names) > 1 {
		defer c.pin()()
	}
	vals, found = resize(c.hits, len(names)), resize(c.found, len(names))
	c.hits, c.found = vals, found
	err = c.pointRead(func() error {
		var m collMeta
		c.vals = c.vals[:0]
		m, exists, err = c.readColl(key, typ)
		for i, name := range names {
			if err != nil {
				return err
			}
			vals[i], found[i] = nil, false
			if exists {
				vals[i], found[i], err = c.appendElem(key, m, sub, name)
			}
		}
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	return vals, found, exists, nil
}

// resize returns s with length n, reusing its room.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// removeElems returns the handler of HDEL or SREM on collections of typ:
// it deletes the distinct elements named after the key and replies with
// how many were there.
func removeElems(typ byte) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		key := args[1]
		var removed int64
		event := "srem"
		if typ == typeHash {
			event = "hdel"
		}
		if err := c.editCollEvent(key, typ, event, func(m *collMeta, existed bool) error {
			if !existed {
				return nil
			}
			var err error
			distinct(args[2:], func(elem []byte) {
				var found bool
				if err == nil {
					_, found, err = c.s.ks.getElem(c.reader(), &c.elemBuf, key, *m, elem)
				}
				if found {
					c.s.ks.deleteElem(c.batch, &c.elemBuf, key, *m, elem)
					removed++
				}
			})
			m.count -= removed
			return err
		}); err != nil {
			return err
		}
		c.wr.Int(removed)
		return nil
	}
}

// maxRandCount is the largest |count| HRANDFIELD and SRANDMEMBER accept,
// as in Redis, which refuses counts whose doubling could overflow.
const maxRandCount = math.MaxInt64 / 2

// randCount parses the count of HRANDFIELD or SRANDMEMBER, answering the
// error Redis gives for a bad one.
func randCount(arg []byte) (int64, error) {
	count, ok := parseInt(arg)
	switch {
	case !ok:
		return 0, redisError(msgNotInteger)
	case count < -maxRandCount || count > maxRandCount:
		return 0, redisError("ERR value is out of range")
	}
	return count, nil
}

// randomElems is the common part of HRANDFIELD, SRANDMEMBER and
// ZRANDMEMBER once their count is parsed (single: none was given). For a
// missing key (null, or with a count an empty array), a zero count, and
// without a count (the one element picked) it writes the whole reply and
// returns done; otherwise it returns the picks for the caller's reply, or
// an error, having written nothing.
func (c *conn) randomElems(key []byte, typ byte, sub []byte, single bool, count int64) (elems, vals [][]byte, done bool, err error) {
	defer c.pin()()
	m, exists, err := c.getColl(key, typ)
	switch {
	case err != nil:
		return nil, nil, false, err
	case single && !exists:
		c.wr.Null()
		return nil, nil, true, nil
	case !single && (!exists || count == 0):
		c.wr.ArrayHeader(0)
		return nil, nil, true, nil
	case single:
		count = 1
	}
	elems, vals, _, err = c.s.ks.pickElems(c.reader(), key, m, sub, count, nil)
	if err != nil {
		return nil, nil, false, err
	}
	if single {
		c.wr.Bulk(elems[0])
		return nil, nil, true, nil
	}
	return elems, vals, false, nil
}

// bulksOrNulls replies with an array of vals, null where found is false
// (HMGET, SORT … GET).
func (c *conn) bulksOrNulls(vals [][]byte, found []bool) {
	c.wr.ArrayHeader(len(vals))
	for i, v := range vals {
		if found[i] {
			c.wr.Bulk(v)
		} else {
			c.wr.Null()
		}
	}
}
