package server

import (
	"math"
	"math/big"
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

// hset returns the handler of HSET, or of HMSET when ok (its reply is +OK
// instead of the count of new fields).
func hset(ok bool) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		if len(args)%2 != 0 {
			return redisError(wrongArity(cmd))
		}
		key := args[1]
		var added int64
		if err := c.editCollEvent(key, typeHash, "hset", func(m *collMeta, existed bool) error {
			var fresh map[string]struct{}
			for i := 2; i < len(args); i += 2 {
				field, val := args[i], args[i+1]
				if int64(len(field)+len(val)) > maxElem(key) {
					return errStringTooBig
				}
				if _, dup := fresh[string(field)]; !dup {
					old := false
					if existed {
						var err error
						if _, old, err = c.s.ks.getElem(c.reader(), &c.elemBuf, key, *m, field); err != nil {
							return err
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
			return nil
		}); err != nil {
			return err
		}
		if ok {
			c.ok()
		} else {
			c.wr.Int(added)
		}
		return nil
	}
}

func cmdHSetNX(c *conn, _ *command, args [][]byte) error {
	key, field, val := args[1], args[2], args[3]
	set := false
	if err := c.editCollEvent(key, typeHash, "hset", func(m *collMeta, existed bool) error {
		if existed {
			_, old, err := c.s.ks.getElem(c.reader(), &c.elemBuf, key, *m, field)
			if err != nil || old {
				return err
			}
		}
		if int64(len(field)+len(val)) > maxElem(key) {
			return errStringTooBig
		}
		c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, field, val)
		m.count++
		set = true
		return nil
	}); err != nil {
		return err
	}
	if set {
		c.wr.Int(1)
	} else {
		c.wr.Int(0)
	}
	return nil
}

func cmdHGet(c *conn, _ *command, args [][]byte) error {
	return c.pointRead(func() error {
		m, exists, err := c.readColl(args[1], typeHash)
		var val []byte
		found := false
		if err == nil && exists {
			val, found, err = c.getElem(args[1], m, args[2])
		}
		if err != nil {
			return err
		}
		c.countLookup(args[1], exists)
		if found {
			c.wr.Bulk(val)
		} else {
			c.wr.Null()
		}
		return nil
	})
}

func cmdHMGet(c *conn, _ *command, args [][]byte) error {
	vals, found, exists, err := c.getElems(args[1], typeHash, nil, args[2:])
	if err != nil {
		return err
	}
	c.countLookup(args[1], exists)
	c.bulksOrNulls(vals, found)
	return nil
}

func cmdHExists(c *conn, _ *command, args [][]byte) error {
	return c.pointRead(func() error {
		m, exists, err := c.readColl(args[1], typeHash)
		found := false
		if err == nil && exists {
			_, found, err = c.getElem(args[1], m, args[2])
		}
		if err != nil {
			return err
		}
		if found {
			c.wr.Int(1)
		} else {
			c.wr.Int(0)
		}
		return nil
	})
}

func cmdHLen(c *conn, _ *command, args [][]byte) error {
	m, _, err := c.getColl(args[1], typeHash)
	if err != nil {
		return err
	}
	c.wr.Int(m.count)
	return nil
}

func cmdHStrlen(c *conn, _ *command, args [][]byte) error {
	return c.pointRead(func() error {
		m, exists, err := c.readColl(args[1], typeHash)
		var val []byte
		if err == nil && exists {
			val, _, err = c.getElem(args[1], m, args[2])
		}
		if err != nil {
			return err
		}
		c.wr.Int(int64(len(val)))
		return nil
	})
}

// hgetAll returns the handler of HGETALL (fields and values: a map in
// RESP3), HKEYS (fields) or HVALS (values). The reply lists fields in
// byte order; Redis' order is its hash table's.
func hgetAll(fields, values bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		defer c.pin()()
		m, exists, err := c.getColl(args[1], typeHash)
		if err != nil {
			return err
		}
		var elems, vals [][]byte
		if exists {
			var err error
			if elems, vals, err = c.s.ks.readElems(c.reader(), args[1], m, nil); err != nil {
				return err
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
		return nil
	}
}

// hashIncr runs a read-modify-write of one hash field for HINCRBY and
// HINCRBYFLOAT, whose keyspace event is event: fn gets the field's
// current value (nil when absent) and returns the new one, or an error.
func (c *conn) hashIncr(key, field []byte, event string, fn func(old []byte, found bool) ([]byte, error)) ([]byte, error) {
	var result []byte
	err := c.editCollEvent(key, typeHash, event, func(m *collMeta, existed bool) error {
		var old []byte
		found := false
		if existed {
			var err error
			if old, found, err = c.s.ks.getElem(c.reader(), &c.elemBuf, key, *m, field); err != nil {
				return err
			}
		}
		var err error
		if result, err = fn(old, found); err != nil {
			return err
		}
		if !found {
			m.count++
		}
		c.s.ks.putElem(c.batch, &c.elemBuf, key, *m, field, result)
		return nil
	})
	return result, err
}

func cmdHIncrBy(c *conn, _ *command, args [][]byte) error {
	delta, ok := parseInt(args[3])
	if !ok {
		return redisError(msgNotInteger)
	}
	var n int64
	_, err := c.hashIncr(args[1], args[2], "hincrby", func(old []byte, found bool) ([]byte, error) {
		if found {
			var ok bool
			if n, ok = parseInt(old); !ok {
				return nil, redisError("ERR hash value is not an integer")
			}
		}
		if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
			return nil, redisError(msgOverflow)
		}
		n += delta
		return strconv.AppendInt(nil, n, 10), nil
	})
	if err != nil {
		return err
	}
	c.wr.Int(n)
	return nil
}

func cmdHIncrByFloat(c *conn, _ *command, args [][]byte) error {
	delta, ok := parseLongDouble(args[3])
	if !ok {
		return redisError(msgNotFloat)
	}
	if delta.IsInf() {
		return redisError("ERR value is NaN or Infinity")
	}
	result, err := c.hashIncr(args[1], args[2], "hincrbyfloat", func(old []byte, found bool) ([]byte, error) {
		cur := new(big.Float)
		if found {
			var ok bool
			if cur, ok = parseLongDouble(old); !ok {
				return nil, redisError("ERR hash value is not a float")
			}
		}
		sum, ok := addLongDouble(cur, delta)
		if !ok {
			return nil, redisError("ERR increment would produce NaN or Infinity")
		}
		return []byte(sum), nil
	})
	if err != nil {
		return err
	}
	c.wr.Bulk(result)
	return nil
}

func cmdHScan(c *conn, _ *command, args [][]byte) error {
	return c.scanColl(args, typeHash, nil, func(dst, val []byte) []byte { return append(dst, val...) })
}

// cmdHRandField implements HRANDFIELD key [count [WITHVALUES]]. Picking
// needs the elements' positions, which an LSM tree does not index: see
// pickElems for when it seeks and when it makes one pass over the hash.
func cmdHRandField(c *conn, _ *command, args [][]byte) error {
	if len(args) > 4 || len(args) == 4 && !is(args[3], "WITHVALUES") {
		return redisError(msgSyntax)
	}
	key := args[1]
	var count int64
	if len(args) >= 3 {
		var err error
		if count, err = randCount(args[2]); err != nil {
			return err
		}
	}
	elems, vals, done, err := c.randomElems(key, typeHash, nil, len(args) == 2, count)
	if err != nil || done {
		return err
	}
	withValues := len(args) == 4
	if withValues && c.wr.Protocol() == 3 {
		c.wr.ArrayHeader(len(elems))
		for i := range elems {
			c.wr.ArrayHeader(2)
			c.wr.Bulk(elems[i])
			c.wr.Bulk(vals[i])
		}
		return nil
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
	return nil
}
