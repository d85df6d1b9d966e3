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
			summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", run: cmdSet, batch: stageSet},
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

// lock takes the stripes of every step-th key in keys and returns what to
// pass to unlock. Inside EXEC it takes nothing: EXEC holds them already.
func (c *conn) lock(keys [][]byte, step int) lockSet {
	if c.inExec() {
		return nil
	}
	locks := c.s.ks.locks
	set := c.stripes[:0]
	for i := 0; i < len(keys); i += step {
		set = set.add(locks, keys[i])
	}
	set = set.lock(locks)
	c.stripes = set
	return set
}

// lockAll takes every stripe, as lock does for keys.
func (c *conn) lockAll() lockSet {
	if c.inExec() {
		return nil
	}
	set := allStripes(c.stripes).lock(c.s.ks.locks)
	c.stripes = set
	return set
}

func (c *conn) unlock(set lockSet) {
	set.unlock(c.s.ks.locks)
	c.stripes = set[:0]
}

// lockBlind takes key's stripe shared, for a write that reads nothing
// (see keyLocks); unlockBlind releases it.
func (c *conn) lockBlind(key []byte) lockSet {
	if c.inExec() {
		return nil
	}
	set := c.stripes[:0].add(c.s.ks.locks, key).lockShared(c.s.ks.locks)
	c.stripes = set
	return set
}

func (c *conn) unlockBlind(set lockSet) {
	set.unlockShared(c.s.ks.locks)
	c.stripes = set[:0]
}

// get reads a string, replying with the error itself when it fails.
func (c *conn) get(key []byte) (v stringValue, exists, ok bool) {
	v, exists, err := c.s.ks.getString(c.reader(), &c.scratch, key)
	if err != nil {
		c.replyErr(err)
		return v, false, false
	}
	return v, exists, true
}

// getEntry reads the entry at key whatever its type, replying with the
// error itself when the read fails.
func (c *conn) getEntry(key []byte) (e entry, exists, ok bool) {
	e, exists, err := c.s.ks.getEntry(c.reader(), &c.scratch, key)
	if err != nil {
		c.replyErr(err)
		return e, false, false
	}
	return e, exists, true
}

// put writes one string through the connection's batch. Like get, it
// replies with the error itself and returns false when the write failed.
func (c *conn) put(key []byte, v stringValue) bool {
	if int64(len(v.val)) > c.maxStringLen(key) {
		c.fail(msgStringTooBig)
		return false
	}
	c.s.ks.putString(c.batch, &c.scratch, key, v)
	return c.apply()
}

// maxStringLen is the longest string a command may leave at key: Redis'
// proto-max-bulk-len, or less where the engine's entry limit is lower.
func (c *conn) maxStringLen(key []byte) int64 {
	return min(c.s.config().ProtoMaxBulkLen, c.s.ks.maxString(key))
}

// apply commits and empties the connection's batch; on failure it replies
// with the error and returns false. Inside EXEC the batch joins the
// transaction's, which commits at the end of EXEC.
func (c *conn) apply() bool {
	if c.inExec() {
		c.exec.batch.Append(c.batch)
		c.batch.Reset()
		if err := c.exec.batch.Err(); err != nil {
			c.replyErr(err)
			return false
		}
		return true
	}
	err := c.s.ks.apply(c.batch)
	c.batch.Reset()
	if err != nil {
		c.replyErr(err)
		return false
	}
	return true
}

// bulkOrNull replies with v's value, or null when the key is absent.
func (c *conn) bulkOrNull(v stringValue, exists bool) {
	if exists {
		c.wr.Bulk(v.val)
	} else {
		c.wr.Null()
	}
}

// cmdGet implements GET. It is a pipeView command: inside a pipeline,
// consecutive GETs read through one engine view (see conn.reader).
func cmdGet(c *conn, _ *command, args [][]byte) {
	v, exists, ok := c.get(args[1])
	if !ok {
		return
	}
	c.countLookup(exists)
	c.bulkOrNull(v, exists)
}

// stageSet is SET's batch function: a plain "SET key value" joins the
// connection's pending batch.
func stageSet(c *conn, args [][]byte) bool {
	if len(args) != 3 || int64(len(args[2])) > c.s.ks.maxString(args[1]) {
		return false // cmdSet refuses it alone, without failing the batch
	}
	c.s.ks.putString(c.batch, &c.scratch, args[1], stringValue{val: args[2]})
	c.lockAtCommit(args[1])
	return true
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
func (c *conn) parseExpiryOpts(cmd *command, opts [][]byte, getex bool) (o expiryOpts, ok bool) {
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
			c.fail(msgSyntax)
			return o, false
		}
	}
	if unit != "" {
		u := timeArg{seconds: unit == "EX" || unit == "EXAT", relative: unit == "EX" || unit == "PX"}
		o.expireAt, ok = c.parseExpireTime(cmd, value, u)
		return o, ok
	}
	return o, true
}

func toUpper(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// timeArg says how a command's time argument, or its reply, counts:
// seconds or milliseconds, from now or from the Unix epoch.
type timeArg struct{ seconds, relative bool }

// The four ways Redis commands count time: EX/EXPIRE/TTL, PX/PEXPIRE/PTTL,
// EXAT/EXPIREAT/EXPIRETIME and PXAT/PEXPIREAT/PEXPIRETIME.
var (
	inSeconds = timeArg{seconds: true, relative: true}
	inMillis  = timeArg{relative: true}
	atSeconds = timeArg{seconds: true}
	atMillis  = timeArg{}
)

// parseExpireTime turns an EX/PX/EXAT/PXAT value into an absolute time
// with Redis' checks: an integer, positive, and no overflow on the way to
// absolute milliseconds.
func (c *conn) parseExpireTime(cmd *command, arg []byte, u timeArg) (time.Time, bool) {
	seconds, relative := u.seconds, u.relative
	n, ok := parseInt(arg)
	if !ok {
		c.fail(msgNotInteger)
		return time.Time{}, false
	}
	if n <= 0 || seconds && n > math.MaxInt64/1000 {
		c.fail(invalidExpire(cmd))
		return time.Time{}, false
	}
	if seconds {
		n *= 1000
	}
	if relative {
		now := time.Now().UnixMilli()
		if n > math.MaxInt64-now {
			c.fail(invalidExpire(cmd))
			return time.Time{}, false
		}
		n += now
	}
	return time.UnixMilli(n), true
}

func cmdSet(c *conn, cmd *command, args [][]byte) {
	o, ok := c.parseExpiryOpts(cmd, args[3:], false)
	if !ok {
		return
	}
	key := args[1]
	// SET overwrites a key of any type; only GET needs the old value to
	// be a string. Without a read it is a blind write.
	var old entry
	var exists bool
	if !o.nx && !o.xx && !o.get && !o.keepTTL {
		defer c.unlockBlind(c.lockBlind(key))
	} else {
		defer c.unlock(c.lock(args[1:2], 1))
		if old, exists, ok = c.getEntry(key); !ok {
			return
		}
		if o.get && exists && old.typ != typeString {
			c.replyErr(errWrongType)
			return
		}
	}
	oldVal := stringValue{val: old.payload}
	if o.nx && exists || o.xx && !exists {
		if o.get {
			c.bulkOrNull(oldVal, exists)
		} else {
			c.wr.Null()
		}
		return
	}
	v := stringValue{val: args[2], expireAt: o.expireAt}
	if o.keepTTL {
		v.expireAt = old.expireAt
	}
	if !c.put(key, v) {
		return
	}
	if o.get {
		c.bulkOrNull(oldVal, exists)
	} else {
		c.ok()
	}
}

// cmdSetNX implements SETNX, which like SET NX counts a key of any type
// as present.
func cmdSetNX(c *conn, _ *command, args [][]byte) {
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	_, exists, ok := c.getEntry(args[1])
	if !ok {
		return
	}
	if exists {
		c.wr.Int(0)
		return
	}
	if !c.put(args[1], stringValue{val: args[2]}) {
		return
	}
	c.wr.Int(1)
}

// setEX returns the handler of SETEX key seconds value (u inSeconds) or
// PSETEX key ms value (u inMillis).
func setEX(u timeArg) handler {
	return func(c *conn, cmd *command, args [][]byte) {
		expireAt, ok := c.parseExpireTime(cmd, args[2], u)
		if !ok {
			return
		}
		held := c.lock(args[1:2], 1)
		defer c.unlock(held)
		if !c.put(args[1], stringValue{val: args[3], expireAt: expireAt}) {
			return
		}
		c.ok()
	}
}

func cmdGetSet(c *conn, _ *command, args [][]byte) {
	var old stringValue
	var existed bool
	if !c.modify(args[1:2], func(v *stringValue, exists bool) bool {
		old, existed = *v, exists
		*v = stringValue{val: args[2]}
		return true
	}) {
		return
	}
	c.bulkOrNull(old, existed)
}

func cmdGetDel(c *conn, _ *command, args [][]byte) {
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	old, exists, ok := c.get(args[1])
	if !ok {
		return
	}
	if exists {
		c.s.ks.deleteKey(c.batch, &c.scratch, args[1])
		if !c.apply() {
			return
		}
	}
	c.bulkOrNull(old, exists)
}

func cmdGetEX(c *conn, cmd *command, args [][]byte) {
	o, ok := c.parseExpiryOpts(cmd, args[2:], true)
	if !ok {
		return
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	v, exists, ok := c.get(args[1])
	if !ok {
		return
	}
	c.countLookup(exists)
	change := !o.expireAt.IsZero() || o.persist && !v.expireAt.IsZero()
	if exists && change {
		v.expireAt = o.expireAt
		if !c.put(args[1], v) {
			return
		}
	}
	c.bulkOrNull(v, exists)
}

func cmdMGet(c *conn, _ *command, args [][]byte) {
	c.wr.ArrayHeader(len(args) - 1)
	for _, key := range args[1:] {
		v, exists, err := c.s.ks.getString(c.reader(), &c.scratch, key)
		c.countLookup(exists)
		// Redis answers nil for a key of another type; an engine error
		// in the middle of an array can only be a nil too.
		if err != nil && !errors.Is(err, errWrongType) {
			c.failed = true
			c.s.log.Warn("MGET read failed", "err", err)
		}
		c.bulkOrNull(v, exists)
	}
}

// mset returns the handler of MSET, or of MSETNX when nx: every pair is
// written in one batch, atomically.
func mset(nx bool) handler {
	return func(c *conn, cmd *command, args [][]byte) {
		if len(args)%2 == 0 {
			c.fail(wrongArity(cmd))
			return
		}
		held := c.lock(args[1:], 2)
		defer c.unlock(held)
		if nx {
			for i := 1; i < len(args); i += 2 {
				exists, err := c.s.ks.exists(c.reader(), &c.scratch, args[i])
				if err != nil {
					c.replyErr(err)
					return
				}
				if exists {
					c.wr.Int(0)
					return
				}
			}
		}
		for i := 1; i < len(args); i += 2 {
			if int64(len(args[i+1])) > c.maxStringLen(args[i]) {
				c.batch.Reset()
				c.fail(msgStringTooBig)
				return
			}
			c.s.ks.putString(c.batch, &c.scratch, args[i], stringValue{val: args[i+1]})
		}
		if !c.apply() {
			return
		}
		if nx {
			c.wr.Int(1)
		} else {
			c.ok()
		}
	}
}

// modify runs a read-modify-write of the key in keyArg (a one-element
// slice of the arguments) under the key's lock: fn gets the current value
// (zero when absent) and changes it in place, or replies itself and
// returns false when nothing is to be stored. modify stores the result and
// reports whether it did; on false a reply has been sent.
func (c *conn) modify(keyArg [][]byte, fn func(v *stringValue, exists bool) bool) bool {
	held := c.lock(keyArg, 1)
	defer c.unlock(held)
	v, exists, ok := c.get(keyArg[0])
	if !ok || !fn(&v, exists) {
		return false
	}
	return c.put(keyArg[0], v)
}

// incrBy returns the handler of INCR and INCRBY (sign 1) or DECR and
// DECRBY (sign -1); the BY forms take the amount as an argument. The key
// keeps its expiry, as in Redis.
func incrBy(sign int64) handler {
	return func(c *conn, _ *command, args [][]byte) {
		delta := int64(1)
		if len(args) == 3 {
			var ok bool
			if delta, ok = parseInt(args[2]); !ok {
				c.fail(msgNotInteger)
				return
			}
		}
		if sign < 0 {
			if delta == math.MinInt64 {
				c.fail("ERR decrement would overflow")
				return
			}
			delta = -delta
		}
		var n int64
		if !c.modify(args[1:2], func(v *stringValue, exists bool) bool {
			if exists {
				var ok bool
				if n, ok = parseInt(v.val); !ok {
					c.fail(msgNotInteger)
					return false
				}
			}
			if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
				c.fail(msgOverflow)
				return false
			}
			n += delta
			v.val = strconv.AppendInt(v.val[:0], n, 10)
			return true
		}) {
			return
		}
		c.wr.Int(n)
	}
}

// cmdIncrByFloat implements INCRBYFLOAT. As in Redis, the key's type is
// checked first, then its value, then the increment.
func cmdIncrByFloat(c *conn, _ *command, args [][]byte) {
	var result []byte
	if !c.modify(args[1:2], func(v *stringValue, exists bool) bool {
		cur := new(big.Float)
		if exists {
			var ok bool
			if cur, ok = parseLongDouble(v.val); !ok {
				c.fail(msgNotFloat)
				return false
			}
		}
		delta, ok := parseLongDouble(args[2])
		if !ok {
			c.fail(msgNotFloat)
			return false
		}
		sum, ok := addLongDouble(cur, delta)
		if !ok {
			c.fail("ERR increment would produce NaN or Infinity")
			return false
		}
		v.val = []byte(sum)
		result = v.val
		return true
	}) {
		return
	}
	c.wr.Bulk(result)
}

func cmdAppend(c *conn, _ *command, args [][]byte) {
	var n int
	if !c.modify(args[1:2], func(v *stringValue, _ bool) bool {
		if int64(len(v.val))+int64(len(args[2])) > c.maxStringLen(args[1]) {
			c.fail(msgStringTooBig)
			return false
		}
		v.val = append(v.val, args[2]...)
		n = len(v.val)
		return true
	}) {
		return
	}
	c.wr.Int(int64(n))
}

func cmdStrlen(c *conn, _ *command, args [][]byte) {
	v, _, ok := c.get(args[1])
	if ok {
		c.wr.Int(int64(len(v.val)))
	}
}

// cmdGetRange implements GETRANGE (and its old name SUBSTR) with Redis'
// index rules: negative indexes count from the end, the range is clamped,
// and an inverted range is empty.
func cmdGetRange(c *conn, _ *command, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.fail(msgNotInteger)
		return
	}
	v, _, ok := c.get(args[1])
	if !ok {
		return
	}
	n := int64(len(v.val))
	if start < 0 && end < 0 && start > end {
		c.wr.Bulk(nil)
		return
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
		return
	}
	c.wr.Bulk(v.val[start : end+1])
}

func cmdSetRange(c *conn, _ *command, args [][]byte) {
	offset, ok := parseInt(args[2])
	if !ok {
		c.fail(msgNotInteger)
		return
	}
	if offset < 0 {
		c.fail("ERR offset is out of range")
		return
	}
	patch := args[3]
	var n int
	if !c.modify(args[1:2], func(v *stringValue, _ bool) bool {
		if len(patch) == 0 {
			// Nothing to write: Redis neither creates the key nor checks
			// the offset against the size limit.
			c.wr.Int(int64(len(v.val)))
			return false
		}
		// Compared as offset > max-len: offset+len would wrap past
		// 2^63 and pass.
		if offset > c.maxStringLen(args[1])-int64(len(patch)) {
			c.fail(msgStringTooBig)
			return false
		}
		if need := int(offset) + len(patch); need > len(v.val) {
			v.val = append(v.val, make([]byte, need-len(v.val))...)
		}
		copy(v.val[offset:], patch)
		n = len(v.val)
		return true
	}) {
		return
	}
	c.wr.Int(int64(n))
}
