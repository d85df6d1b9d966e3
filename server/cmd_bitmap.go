package server

import (
	"bytes"

	"github.com/lsmgo-dev/lsmgo/server/internal/bitops"
)

// Bitmap commands work on the string type: each reads the whole value,
// edits it with package bitops and writes it back under the key's stripe
// lock, as SETRANGE does. Argument order and errors follow Redis 7.2:
// arguments are parsed before the key is read.
func init() {
	const g, rw, ro = "bitmap", flagWrite | flagDenyOOM, flagReadonly
	register(
		spec{name: "setbit", arity: 4, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", run: cmdSetBit},
		spec{name: "getbit", arity: 3, flags: ro | flagFast, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Returns a bit value by offset.", run: cmdGetBit},
		spec{name: "bitcount", arity: -2, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Counts the number of set bits (population counting) in a string.", run: cmdBitCount},
		spec{name: "bitpos", arity: -3, flags: ro, pipe: pipeView, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.8.7",
			summary: "Finds the first set (1) or clear (0) bit in a string.", run: cmdBitPos},
		spec{name: "bitop", arity: -4, flags: rw, firstKey: 2, lastKey: -1, step: 1, group: g, since: "2.6.0",
			summary: "Performs bitwise operations on multiple strings, and stores the result.", run: cmdBitOp},
		spec{name: "bitfield", arity: -2, flags: rw, firstKey: 1, lastKey: 1, step: 1, group: g, since: "3.2.0",
			summary: "Performs arbitrary bitfield integer operations on strings.", run: cmdBitField},
		spec{name: "bitfield_ro", arity: -2, flags: ro | flagFast, firstKey: 1, lastKey: 1, step: 1, group: g, since: "6.0.0",
			summary: "Performs arbitrary read-only bitfield integer operations on strings.", run: cmdBitField},
	)
}

const (
	msgBitOffset = "ERR bit offset is not an integer or out of range"
	msgBitValue  = "ERR bit is not an integer or out of range"
)

// bitOffset parses a bit offset. For BITFIELD (width > 0) "#n" means n
// fields of width bits; the product wraps as Redis' does. Offsets whose
// byte lies at or past proto-max-bulk-len are refused (2^32-1 is the
// largest by default).
func (c *conn) bitOffset(arg []byte, width uint) (uint64, error) {
	hash := width > 0 && len(arg) > 0 && arg[0] == '#'
	if hash {
		arg = arg[1:]
	}
	n, ok := parseInt(arg)
	if hash {
		n *= int64(width)
	}
	if !ok || n < 0 || n>>3 >= c.s.config().ProtoMaxBulkLen {
		return 0, redisError(msgBitOffset)
	}
	return uint64(n), nil
}

func cmdSetBit(c *conn, _ *command, args [][]byte) error {
	offset, err := c.bitOffset(args[2], 0)
	if err != nil {
		return err
	}
	on, ok := parseInt(args[3])
	if !ok || on&^1 != 0 {
		return redisError(msgBitValue)
	}
	// Setting a bit of a plain string to the value it has is a read: no
	// lock, no write, as Redis does not count it as a change either. A
	// fragmented string's bit is read once, under the lock (setBitFrag).
	if v, exists, err := c.getRef(args[1]); err != nil {
		return err
	} else if exists && v.frag == nil && offset>>3 < uint64(v.length()) && int64(bitops.GetBit(v.val, offset)) == on {
		c.wr.Int(on)
		return nil
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	v, exists, err := c.getRef(args[1])
	if err != nil {
		return err
	}
	if v.frag != nil || offset>>3 >= fragThreshold {
		return c.setBitFrag(args[1], v, !exists, offset, on == 1)
	}
	grown := bitops.Grow(v.val, offset)
	old := bitops.SetBit(grown, offset, on == 1)
	// An unchanged bit in a string that did not grow is not a write, as
	// in Redis: no engine write, no WATCH invalidation.
	if !exists || len(grown) != len(v.val) || int64(old) != on {
		v.val = grown
		if err := c.put(args[1], v); err != nil {
			return err
		}
		c.notifyEdit(typeString, "setbit", args[1], !exists, false)
	}
	c.wr.Int(int64(old))
	return nil
}

// bitAt reads bit offset of v, the string at key, which getRef read.
func (c *conn) bitAt(key []byte, v stringValue, offset uint64) (int, error) {
	if v.frag == nil {
		return bitops.GetBit(v.val, offset), nil
	}
	if int64(offset>>3) >= v.frag.count {
		return 0, nil
	}
	b, err := c.s.ks.fragRead(c.reader(), key, *v.frag, int64(offset>>3), 1)
	if err != nil {
		return 0, err
	}
	return bitops.GetBit(b, offset&7), nil
}

// fragEdit starts an edit of the string v at key as a fragmented string:
// v's own fragments, or, for a plain string, a new fragmented string
// holding v's bytes (the write that makes the string long enough).
func (c *conn) fragEdit(key []byte, v stringValue) (*fragEdit, error) {
	if v.frag != nil {
		e := c.s.ks.newFragEdit(c.reader(), key, *v.frag)
		e.m.expireAt = v.expireAt
		return e, nil
	}
	e, err := c.s.ks.newFragString(c.reader(), c.scratch.ns, key, v)
	if err != nil {
		return nil, err
	}
	return e, e.write(0, v.val)
}

// setBitFrag is SETBIT on a fragmented string, or on a string it makes
// long enough to become one: one fragment read and written.
func (c *conn) setBitFrag(key []byte, v stringValue, created bool, offset uint64, on bool) error {
	e, err := c.fragEdit(key, v)
	if err != nil {
		return err
	}
	at := int64(offset >> 3)
	// Staging the bit's fragment first makes it the one read.
	f, err := e.frag(at / fragSize)
	if err != nil {
		return err
	}
	b := []byte{f[at%fragSize]}
	old := bitops.SetBit(b, offset&7, on)
	if v.frag == nil || at >= e.length() || old != bitops.GetBit(b, offset&7) {
		if err := e.write(at, b); err != nil {
			return err
		}
		e.flush(c.batch, &c.scratch)
		if err := c.commit(); err != nil {
			return err
		}
		c.notifyEdit(typeString, "setbit", key, created, false)
	}
	c.wr.Int(int64(old))
	return nil
}

func cmdGetBit(c *conn, _ *command, args [][]byte) error {
	offset, err := c.bitOffset(args[2], 0)
	if err != nil {
		return err
	}
	v, _, err := c.getRef(args[1])
	if err != nil {
		return err
	}
	bit, err := c.bitAt(args[1], v, offset)
	if err != nil {
		return err
	}
	c.wr.Int(int64(bit))
	return nil
}

// bitRange parses BITCOUNT's and BITPOS's start, end and unit
// arguments (end and unit may be absent). Redis checks them in the order
// start, end, unit for BITCOUNT but start, unit, end for BITPOS (unitFirst),
// which decides the error when several are bad.
func bitRange(args [][]byte, unitFirst bool) (r bitops.Range, err error) {
	var ok bool
	if r.Start, ok = parseInt(args[0]); !ok {
		return r, redisError(msgNotInteger)
	}
	end := func() error {
		r.End = -1
		if len(args) > 1 {
			if r.End, ok = parseInt(args[1]); !ok {
				return redisError(msgNotInteger)
			}
		}
		return nil
	}
	unit := func() error {
		if len(args) > 2 {
			switch {
			case is(args[2], "BIT"):
				r.Bit = true
			case !is(args[2], "BYTE"):
				return redisError(msgSyntax)
			}
		}
		return nil
	}
	if unitFirst {
		if err := unit(); err != nil {
			return r, err
		}
		return r, end()
	}
	if err := end(); err != nil {
		return r, err
	}
	return r, unit()
}

func cmdBitCount(c *conn, _ *command, args [][]byte) error {
	var r bitops.Range
	switch len(args) {
	case 2:
	case 4, 5:
		var err error
		if r, err = bitRange(args[2:], false); err != nil {
			return err
		}
	default:
		return redisError(msgSyntax)
	}
	if len(args) == 2 {
		// The whole string: a fragmented one is counted fragment by
		// fragment, never read whole.
		v, _, err := c.getRef(args[1])
		if err != nil {
			return err
		}
		n := bitops.CountAll(v.val)
		if v.frag != nil {
			if n, err = c.s.ks.fragCount(c.reader(), args[1], *v.frag); err != nil {
				return err
			}
		}
		c.wr.Int(n)
		return nil
	}
	v, _, err := c.get(args[1])
	if err != nil {
		return err
	}
	c.wr.Int(bitops.Count(v.val, r))
	return nil
}

func cmdBitPos(c *conn, _ *command, args [][]byte) error {
	bit, ok := parseInt(args[2])
	if !ok {
		return redisError(msgNotInteger)
	}
	if bit != 0 && bit != 1 {
		return redisError("ERR The bit argument must be 1 or 0.")
	}
	if len(args) > 6 {
		return redisError(msgSyntax)
	}
	var r *bitops.Range
	if len(args) > 3 {
		parsed, err := bitRange(args[3:], true)
		if err != nil {
			return err
		}
		r = &parsed
	}
	v, exists, err := c.get(args[1])
	if err != nil {
		return err
	}
	if !exists {
		// A missing key reads as endless zeros.
		c.wr.Int(-bit)
		return nil
	}
	c.wr.Int(bitops.Pos(v.val, int(bit), r, len(args) > 4))
	return nil
}

func cmdBitOp(c *conn, _ *command, args [][]byte) error {
	var op bitops.Op
	switch {
	case is(args[1], "AND"):
		op = bitops.And
	case is(args[1], "OR"):
		op = bitops.Or
	case is(args[1], "XOR"):
		op = bitops.Xor
	case is(args[1], "NOT"):
		op = bitops.Not
	default:
		return redisError(msgSyntax)
	}
	if op == bitops.Not && len(args) != 4 {
		return redisError("ERR BITOP NOT must be called with a single source key.")
	}
	held := c.lock(args[2:], 1)
	defer c.unlock(held)
	srcs := make([][]byte, len(args)-3)
	for i, key := range args[3:] {
		v, _, err := c.get(key)
		if err != nil {
			return err
		}
		srcs[i] = v.val
	}
	dest := args[2]
	old, existed, err := c.getEntry(dest)
	if err != nil {
		return err
	}
	res := bitops.Apply(op, srcs)
	switch {
	case len(res) > 0:
		// The result replaces the destination whatever its type, without
		// its expiry.
		if err := c.putBits(dest, stringValue{val: res}); err != nil {
			return err
		}
		c.notifySet(dest, !existed, false)
	case existed:
		c.s.ks.deleteKey(c.batch, &c.scratch, dest)
		if err := c.commit(); err != nil {
			return err
		}
		c.notify(notifyGeneric, "del", dest)
	}
	if existed {
		c.s.ks.reclaimDeleted(dest, old)
	}
	c.wr.Int(int64(len(res)))
	return nil
}

// bitFieldOp is one parsed BITFIELD subcommand.
type bitFieldOp struct {
	write, incr bool
	field       bitops.Field
	offset      uint64
	value       int64
	overflow    bitops.Overflow
}

// parseBitField parses BITFIELD's subcommands, all before any runs, as
// Redis does.
func (c *conn) parseBitField(cmd *command, args [][]byte) ([]bitFieldOp, error) {
	var ops []bitFieldOp
	overflow := bitops.Wrap
	for j := 0; j < len(args); j++ {
		rest := len(args) - j - 1
		var op bitFieldOp
		switch {
		case is(args[j], "GET") && rest >= 2:
		case is(args[j], "SET") && rest >= 3:
			op.write = true
		case is(args[j], "INCRBY") && rest >= 3:
			op.write, op.incr = true, true
		case is(args[j], "OVERFLOW") && rest >= 1:
			j++
			switch {
			case is(args[j], "WRAP"):
				overflow = bitops.Wrap
			case is(args[j], "SAT"):
				overflow = bitops.Sat
			case is(args[j], "FAIL"):
				overflow = bitops.Fail
			default:
				return nil, redisError("ERR Invalid OVERFLOW type specified")
			}
			continue
		default:
			return nil, redisError(msgSyntax)
		}
		var ok bool
		if op.field, ok = bitops.ParseField(args[j+1], parseInt); !ok {
			return nil, redisError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
		}
		var err error
		if op.offset, err = c.bitOffset(args[j+2], op.field.Bits); err != nil {
			return nil, err
		}
		j += 2
		if op.write {
			j++
			if op.value, ok = parseInt(args[j]); !ok {
				return nil, redisError(msgNotInteger)
			}
		}
		op.overflow = overflow
		ops = append(ops, op)
	}
	// Redis refuses writes in BITFIELD_RO only once all parsed.
	for _, op := range ops {
		if op.write && cmd.flags&flagWrite == 0 {
			return nil, redisError("ERR BITFIELD_RO only supports the GET subcommand")
		}
	}
	return ops, nil
}

func cmdBitField(c *conn, cmd *command, args [][]byte) error {
	ops, err := c.parseBitField(cmd, args[2:])
	if err != nil {
		return err
	}
	var maxBit uint64
	write := false
	for _, op := range ops {
		if op.write {
			write = true
			maxBit = max(maxBit, op.offset+uint64(op.field.Bits)-1)
		}
	}
	if write {
		held := c.lock(args[1:2], 1)
		defer c.unlock(held)
	}
	v, exists, err := c.getRef(args[1])
	if err != nil {
		return err
	}
	var results []bitFieldResult
	var grown bool
	if v.frag != nil || write && maxBit>>3 >= fragThreshold {
		results, grown, err = c.bitFieldFrag(args[1], v, exists, ops, write, maxBit)
	} else {
		results, grown, err = c.bitFieldPlain(args[1], v, exists, ops, write, maxBit)
	}
	if err != nil {
		return err
	}
	// Redis counts as changes the writes that did not fail and changed
	// their field or found the key created or grown.
	changes := 0
	for i, r := range results {
		if ops[i].write && r.ok && (grown || r.changed) {
			changes++
		}
	}
	if !exists && write {
		c.notifyNew(args[1])
	}
	if changes > 0 {
		c.notify(notifyString, "setbit", args[1])
	}
	c.wr.ArrayHeader(len(ops))
	for _, r := range results {
		if r.ok {
			c.wr.Int(r.n)
		} else {
			c.wr.Null()
		}
	}
	return nil
}

// bitFieldResult is one BITFIELD subcommand's reply: a number, or null
// when an overflow FAILed.
type bitFieldResult struct {
	n       int64
	ok      bool
	changed bool // a write that did not fail and changed its field
}

// run runs op on s, whose bit 0 is the string's bit base.
func (op bitFieldOp) run(s []byte, base uint64) bitFieldResult {
	var r bitFieldResult
	off := op.offset - base
	var before int64
	if op.write {
		before = op.field.Get(s, off)
	}
	switch {
	case op.incr:
		r.n, r.ok = op.field.IncrBy(s, off, op.value, op.overflow)
	case op.write:
		r.n, r.ok = op.field.Set(s, off, op.value, op.overflow)
	default:
		r.n, r.ok = op.field.Get(s, off), true
	}
	r.changed = op.write && r.ok && op.field.Get(s, off) != before
	return r
}

// bitFieldPlain runs BITFIELD on a plain string, v at key, which stays
// plain: it is edited whole and written back when changed. grown says the
// writes created the key or made it longer.
func (c *conn) bitFieldPlain(key []byte, v stringValue, exists bool, ops []bitFieldOp, write bool, maxBit uint64) (results []bitFieldResult, grown bool, err error) {
	s := v.val
	if write {
		s = bitops.Grow(bytes.Clone(v.val), maxBit)
	}
	grown = write && (!exists || len(s) != len(v.val))
	results = make([]bitFieldResult, len(ops))
	for i, op := range ops {
		results[i] = op.run(s, 0)
	}
	// Redis creates or grows the key even when every write failed.
	if write && (!exists || !bytes.Equal(s, v.val)) {
		v.val = s
		if err := c.put(key, v); err != nil {
			return nil, false, err
		}
	}
	return results, grown, nil
}

// bitFieldFrag runs BITFIELD on a fragmented string, or on one its
// writes make long enough to become one: each subcommand reads and
// writes only the (at most 9) bytes of its field.
func (c *conn) bitFieldFrag(key []byte, v stringValue, exists bool, ops []bitFieldOp, write bool, maxBit uint64) (results []bitFieldResult, grown bool, err error) {
	e, err := c.fragEdit(key, v)
	if err != nil {
		return nil, false, err
	}
	changed := v.frag == nil
	grown = write && !exists
	if write && int64(maxBit>>3) >= e.length() {
		// Redis grows the string to the last field written, even when
		// every write fails.
		e.m.count, changed, grown = int64(maxBit>>3)+1, true, true
	}
	results = make([]bitFieldResult, len(ops))
	for i, op := range ops {
		lo, hi := int64(op.offset>>3), int64((op.offset+uint64(op.field.Bits)-1)>>3)
		window, err := e.read(lo, hi-lo+1)
		if err != nil {
			return nil, false, err
		}
		before := bytes.Clone(window)
		results[i] = op.run(window, uint64(lo)*8)
		if !bytes.Equal(before, window) {
			if err := e.write(lo, window); err != nil {
				return nil, false, err
			}
			changed = true
		}
	}
	if write && changed {
		e.flush(c.batch, &c.scratch)
		if err := c.commit(); err != nil {
			return nil, false, err
		}
	}
	return results, grown, nil
}
