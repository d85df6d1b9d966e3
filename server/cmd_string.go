package server

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"time"
)

func init() {
	const g, rw, ro = "string", flagWrite | flagDenyOOM, flagReadonly
	register(
		spec{name: "get", arity: 2, flags: ro | flagFast, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the string value of a key.", run: cmdGet},
		spec{name: "set", arity: -3, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", run: cmdSet},
		spec{name: "setnx", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Set the string value of a key only when the key doesn't exist.", run: cmdSetNX},
		spec{name: "setex", arity: 4, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", run: setEX(inSeconds)},
		spec{name: "psetex", arity: 4, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", run: setEX(inMillis)},
		spec{name: "getset", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the previous string value of a key after setting it to a new value.", run: cmdGetSet},
		spec{name: "getdel", arity: 2, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.2.0",
			summary: "Returns the string value of a key after deleting the key.", run: cmdGetDel},
		spec{name: "getex", arity: -2, flags: flagWrite | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.2.0",
			summary: "Returns the string value of a key after setting its expiration time.", run: cmdGetEX},
		spec{name: "mget", arity: -2, flags: ro | flagFast, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Atomically returns the string values of one or more keys.", run: cmdMGet},
		spec{name: "mset", arity: -3, flags: rw, firstKey: 1, lastKey: -1, step: 2, group: g, since: "1.0.1",
			summary: "Atomically creates or modifies the string values of one or more keys.", run: mset(false)},
		spec{name: "msetnx", arity: -3, flags: rw, firstKey: 1, lastKey: -1, step: 2, group: g, since: "1.0.1",
			summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", run: mset(true)},
		spec{name: "incr", arity: 2, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: incrBy(1)},
		spec{name: "decr", arity: 2, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: incrBy(-1)},
		spec{name: "incrby", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: incrBy(1)},
		spec{name: "decrby", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", run: incrBy(-1)},
		spec{name: "incrbyfloat", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: cmdIncrByFloat},
		spec{name: "append", arity: 3, flags: rw | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.0.0",
			summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", run: cmdAppend},
		spec{name: "strlen", arity: 2, flags: ro | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Returns the length of a string value.", run: cmdStrlen},
		spec{name: "getrange", arity: 4, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.4.0",
			summary: "Returns a substring of the string stored at a key.", run: cmdGetRange},
		spec{name: "substr", arity: 4, flags: ro, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns a substring from a string value.", run: cmdGetRange},
		spec{name: "setrange", arity: 4, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", run: cmdSetRange},
	)
}

// cmdGet implements GET. It is a pipeView command: inside a pipeline,
// consecutive GETs read through one engine view (see conn.reader).
func cmdGet(c *conn, _ *command, args [][]byte) error {
	v, exists, err := c.get(args[1])
	if err != nil {
		return err
	}
	c.countLookup(args[1], exists)
	c.bulkOrNull(v, exists)
	return nil
}

// expiryOpts are the parsed options of SET and GETEX.
type expiryOpts struct {
	nx, xx, get, keepTTL, persist bool
	// expireAt is set by EX, PX, EXAT or PXAT.
	expireAt time.Time
}

// parseExpiryOpts parses SET's options, or GETEX's when getex is set, with
// Redis' rules: NX/XX exclusive, one of EX/PX/EXAT/PXAT/KEEPTTL/PERSIST,
// then the expiry value checked last.
func parseExpiryOpts(cmd *command, opts [][]byte, getex bool) (o expiryOpts, err error) {
	var unit string
	var value []byte
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		noExpiry := unit == "" && !o.keepTTL && !o.persist
		switch {
		case !getex && is(a, "NX") && !o.xx:
			o.nx = true
		case !getex && is(a, "XX") && !o.nx:
			o.xx = true
		case !getex && is(a, "GET"):
			o.get = true
		case !getex && is(a, "KEEPTTL") && noExpiry:
			o.keepTTL = true
		case getex && is(a, "PERSIST") && noExpiry:
			o.persist = true
		case noExpiry && i+1 < len(opts) && (is(a, "EX") || is(a, "PX") || is(a, "EXAT") || is(a, "PXAT")):
			unit, value = string(toUpper(a)), opts[i+1]
			i++
		default:
			return o, redisError(msgSyntax)
		}
	}
	if unit != "" {
		u := timeArg{seconds: unit == "EX" || unit == "EXAT", relative: unit == "EX" || unit == "PX"}
		o.expireAt, err = parseExpireTime(cmd, value, u)
		return o, err
	}
	return o, nil
}

func cmdSet(c *conn, cmd *command, args [][]byte) error {
	o, err := parseExpiryOpts(cmd, args[3:], false)
	if err != nil {
		return err
	}
	key := args[1]
	// SET overwrites a key of any type; only GET needs the old value to
	// be a string. Without a read it is a blind write.
	var old entry
	var exists bool
	if !o.nx && !o.xx && !o.get && !o.keepTTL && !c.s.notifying(notifyNew) {
		defer c.unlockBlind(c.lockBlind(key))
	} else {
		// Also when "new" events are on: only a read tells a new key.
		defer c.unlock(c.lock(args[1:2], 1))
		var err error
		if old, exists, err = c.getEntry(key); err != nil {
			return err
		}
		if o.get && exists && typeNames[old.typ] != "string" {
			return errWrongType
		}
	}
	oldVal := stringValue{val: old.payload}
	if o.get && exists && old.typ == typeFragString {
		if oldVal, _, err = c.get(key); err != nil {
			return err
		}
	}
	if o.nx && exists || o.xx && !exists {
		if o.get {
			c.bulkOrNull(oldVal, exists)
		} else {
			c.wr.Null()
		}
		return nil
	}
	v := stringValue{val: args[2], expireAt: o.expireAt}
	if o.keepTTL {
		v.expireAt = old.expireAt
	}
	if err := c.put(key, v); err != nil {
		return err
	}
	c.notifySet(key, !exists, !o.expireAt.IsZero())
	if o.get {
		c.bulkOrNull(oldVal, exists)
	} else {
		c.ok()
	}
	return nil
}

// cmdSetNX implements SETNX, which like SET NX counts a key of any type
// as present.
func cmdSetNX(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	_, exists, err := c.getEntry(args[1])
	if err != nil {
		return err
	}
	if exists {
		c.wr.Int(0)
		return nil
	}
	if err := c.put(args[1], stringValue{val: args[2]}); err != nil {
		return err
	}
	c.notifySet(args[1], true, false)
	c.wr.Int(1)
	return nil
}

// setEX returns the handler of SETEX key seconds value (u inSeconds) or
// PSETEX key ms value (u inMillis).
func setEX(u timeArg) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		expireAt, err := parseExpireTime(cmd, args[2], u)
		if err != nil {
			return err
		}
		held := c.lock(args[1:2], 1)
		defer c.unlock(held)
		created, err := c.creates(args[1])
		if err != nil {
			return err
		}
		if err := c.put(args[1], stringValue{val: args[3], expireAt: expireAt}); err != nil {
			return err
		}
		c.notifySet(args[1], created, true)
		c.ok()
		return nil
	}
}

func cmdGetSet(c *conn, _ *command, args [][]byte) error {
	var old stringValue
	var existed bool
	if err := c.modify(args[1:2], "set", func(v *stringValue, exists bool) error {
		old, existed = *v, exists
		*v = stringValue{val: args[2]}
		return nil
	}); err != nil {
		return err
	}
	c.bulkOrNull(old, existed)
	return nil
}

func cmdGetDel(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	old, exists, err := c.get(args[1])
	if err != nil {
		return err
	}
	if exists {
		c.s.ks.deleteKey(c.batch, &c.scratch, args[1])
		if err := c.commit(); err != nil {
			return err
		}
		c.notify(notifyGeneric, "del", args[1])
	}
	c.bulkOrNull(old, exists)
	return nil
}

func cmdGetEX(c *conn, cmd *command, args [][]byte) error {
	o, err := parseExpiryOpts(cmd, args[2:], true)
	if err != nil {
		return err
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	v, exists, err := c.get(args[1])
	if err != nil {
		return err
	}
	c.countLookup(args[1], exists)
	change := !o.expireAt.IsZero() || o.persist && !v.expireAt.IsZero()
	if exists && change {
		v.expireAt = o.expireAt
		if err := c.put(args[1], v); err != nil {
			return err
		}
		switch {
		case o.persist:
			c.notify(notifyGeneric, "persist", args[1])
		case !o.expireAt.After(time.Now()):
			c.notify(notifyGeneric, "del", args[1]) // EXAT in the past
		default:
			c.notify(notifyGeneric, "expire", args[1])
		}
	}
	c.bulkOrNull(v, exists)
	return nil
}

func cmdMGet(c *conn, _ *command, args [][]byte) error {
	c.wr.ArrayHeader(len(args) - 1)
	for _, key := range args[1:] {
		v, exists, err := c.get(key)
		c.countLookup(key, exists)
		// Redis answers nil for a key of another type; an engine error
		// in the middle of an array can only be a nil too.
		if err != nil && !errors.Is(err, errWrongType) {
			c.failed = true
			c.s.log.Warn("MGET read failed", "err", err)
		}
		c.bulkOrNull(v, exists)
	}
	return nil
}

// mset returns the handler of MSET, or of MSETNX when nx: every pair is
// written in one batch, atomically.
func mset(nx bool) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		if len(args)%2 == 0 {
			return redisError(wrongArity(cmd))
		}
		held := c.lock(args[1:], 2)
		defer c.unlock(held)
		var created []bool // for "new" events: which keys were absent
		if c.s.notifying(notifyNew) {
			for i := 1; i < len(args); i += 2 {
				isNew, err := c.creates(args[i])
				if err != nil {
					return err
				}
				created = append(created, isNew)
			}
		}
		if nx {
			for i := 1; i < len(args); i += 2 {
				exists, err := c.s.ks.exists(c.reader(), &c.scratch, args[i])
				if err != nil {
					return err
				}
				if exists {
					c.wr.Int(0)
					return nil
				}
			}
		}
		for i := 1; i < len(args); i += 2 {
			if int64(len(args[i+1])) > c.maxStringLen(args[i]) {
				c.batch.Reset()
				return redisError(msgStringTooBig)
			}
			c.s.ks.putString(c.batch, &c.scratch, args[i], stringValue{val: args[i+1]})
		}
		if err := c.commit(); err != nil {
			return err
		}
		for i := 1; i < len(args); i += 2 {
			c.notifySet(args[i], created != nil && created[i/2], false)
		}
		if nx {
			c.wr.Int(1)
		} else {
			c.ok()
		}
		return nil
	}
}

// modify runs a read-modify-write of the key in keyArg (a one-element
// slice of the arguments) under the key's lock: fn gets the current value
// (zero when absent) and changes it in place, or returns an error, or
// errNothingToStore when the command writes nothing. modify stores the
// result, fires the keyspace event named event (a string event, after
// "new" when the key was absent), and returns fn's error or the write's;
// it replies nothing.
func (c *conn) modify(keyArg [][]byte, event string, fn func(v *stringValue, exists bool) error) error {
	return c.editString(keyArg, event, nil, fn)
}

// editString is modify for the commands that edit a fragmented string
// in place (APPEND, SETRANGE): frag, when not nil, gets such a string's
// edit, which editString then writes; fn gets a plain string (or, when
// frag is nil, any string read whole).
func (c *conn) editString(keyArg [][]byte, event string, frag func(e *fragEdit) error, fn func(v *stringValue, exists bool) error) error {
	held := c.lock(keyArg, 1)
	defer c.unlock(held)
	key := keyArg[0]
	v, exists, err := c.getRef(key)
	if err != nil {
		return err
	}
	if v.frag != nil && frag != nil {
		e, err := c.fragEdit(key, v)
		if err != nil {
			return err
		}
		if err := frag(e); err != nil {
			return err
		}
		e.flush(c.batch, &c.scratch)
		if err := c.commit(); err != nil {
			return err
		}
		c.notify(notifyString, event, key)
		return nil
	}
	if v.frag != nil {
		if v.val, err = c.s.ks.readFragString(c.reader(), key, *v.frag); err != nil {
			return err
		}
	}
	if err := fn(&v, exists); err != nil {
		return err
	}
	if err := c.put(key, v); err != nil {
		return err
	}
	if !exists {
		c.notifyNew(key)
	}
	c.notify(notifyString, event, key)
	return nil
}

// errNothingToStore tells modify that the command writes nothing: its
// caller replies as on success.
var errNothingToStore = errors.New("nothing to store")

// incrBy returns the handler of INCR and INCRBY (sign 1) or DECR and
// DECRBY (sign -1); the BY forms take the amount as an argument. The key
// keeps its expiry, as in Redis.
func incrBy(sign int64) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		delta := int64(1)
		if len(args) == 3 {
			var ok bool
			if delta, ok = parseInt(args[2]); !ok {
				return redisError(msgNotInteger)
			}
		}
		if sign < 0 {
			if delta == math.MinInt64 {
				return redisError("ERR decrement would overflow")
			}
			delta = -delta
		}
		var n int64
		if err := c.modify(args[1:2], "incrby", func(v *stringValue, exists bool) error {
			if exists {
				var ok bool
				if n, ok = parseInt(v.val); !ok {
					return redisError(msgNotInteger)
				}
			}
			if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
				return redisError(msgOverflow)
			}
			n += delta
			v.val = strconv.AppendInt(v.val[:0], n, 10)
			return nil
		}); err != nil {
			return err
		}
		c.wr.Int(n)
		return nil
	}
}

// cmdIncrByFloat implements INCRBYFLOAT. As in Redis, the key's type is
// checked first, then its value, then the increment.
func cmdIncrByFloat(c *conn, _ *command, args [][]byte) error {
	var result []byte
	if err := c.modify(args[1:2], "incrbyfloat", func(v *stringValue, exists bool) error {
		cur := new(big.Float)
		if exists {
			var ok bool
			if cur, ok = parseLongDouble(v.val); !ok {
				return redisError(msgNotFloat)
			}
		}
		delta, ok := parseLongDouble(args[2])
		if !ok {
			return redisError(msgNotFloat)
		}
		sum, ok := addLongDouble(cur, delta)
		if !ok {
			return redisError("ERR increment would produce NaN or Infinity")
		}
		v.val = []byte(sum)
		result = v.val
		return nil
	}); err != nil {
		return err
	}
	c.wr.Bulk(result)
	return nil
}

func cmdAppend(c *conn, _ *command, args [][]byte) error {
	var n int64
	if err := c.editString(args[1:2], "append", func(e *fragEdit) error {
		if e.length()+int64(len(args[2])) > c.s.config().ProtoMaxBulkLen {
			return redisError(msgStringTooBig)
		}
		n = e.length() + int64(len(args[2]))
		return e.write(e.length(), args[2])
	}, func(v *stringValue, _ bool) error {
		if int64(len(v.val))+int64(len(args[2])) > c.maxStringLen(args[1]) {
			return redisError(msgStringTooBig)
		}
		v.val = append(v.val, args[2]...)
		n = int64(len(v.val))
		return nil
	}); err != nil && err != errNothingToStore {
		return err
	}
	c.wr.Int(n)
	return nil
}

func cmdStrlen(c *conn, _ *command, args [][]byte) error {
	v, _, err := c.getRef(args[1])
	if err != nil {
		return err
	}
	c.wr.Int(v.length())
	return nil
}

// cmdGetRange implements GETRANGE (and its old name SUBSTR) with Redis'
// index rules: negative indexes count from the end, the range is clamped,
// and an inverted range is empty.
func cmdGetRange(c *conn, _ *command, args [][]byte) error {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return redisError(msgNotInteger)
	}
	v, _, err := c.getRef(args[1])
	if err != nil {
		return err
	}
	n := v.length()
	if start < 0 && end < 0 && start > end {
		c.wr.Bulk(nil)
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		c.wr.Bulk(nil)
		return nil
	}
	if v.frag != nil {
		part, err := c.s.ks.fragRead(c.reader(), args[1], *v.frag, start, end-start+1)
		if err != nil {
			return err
		}
		c.wr.Bulk(part)
		return nil
	}
	c.wr.Bulk(v.val[start : end+1])
	return nil
}

func cmdSetRange(c *conn, _ *command, args [][]byte) error {
	offset, ok := parseInt(args[2])
	if !ok {
		return redisError(msgNotInteger)
	}
	if offset < 0 {
		return redisError("ERR offset is out of range")
	}
	patch := args[3]
	var n int
	if err := c.editString(args[1:2], "setrange", func(e *fragEdit) error {
		n = int(e.length())
		if len(patch) == 0 {
			return errNothingToStore
		}
		if offset > c.s.config().ProtoMaxBulkLen-int64(len(patch)) {
			return redisError(msgStringTooBig)
		}
		err := e.write(offset, patch)
		n = int(e.length())
		return err
	}, func(v *stringValue, _ bool) error {
		if len(patch) == 0 {
			// Nothing to write: Redis neither creates the key nor checks
			// the offset against the size limit.
			n = len(v.val)
			return errNothingToStore
		}
		// Compared as offset > max-len: offset+len would wrap past
		// 2^63 and pass.
		if offset > c.maxStringLen(args[1])-int64(len(patch)) {
			return redisError(msgStringTooBig)
		}
		if need := int(offset) + len(patch); need > len(v.val) {
			v.val = append(v.val, make([]byte, need-len(v.val))...)
		}
		copy(v.val[offset:], patch)
		n = len(v.val)
		return nil
	}); err != nil && err != errNothingToStore {
		return err
	}
	c.wr.Int(int64(n))
	return nil
}
