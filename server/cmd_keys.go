package server

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// cmdDel implements DEL and UNLINK, which are the same here: deleting is
// one tombstone per key whatever the value's size; a collection's
// elements are reclaimed later (reclaim.go).
func cmdDel(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[1:], 1)
	defer c.unlock(held)
	var deleted []deletedEntry
	var err error
	distinct(args[1:], func(key []byte) {
		var e entry
		var exists bool
		if err == nil {
			e, exists, err = c.s.ks.getEntry(c.reader(), &c.scratch, key)
		}
		if exists {
			c.s.ks.deleteKey(c.batch, &c.scratch, key)
			deleted = append(deleted, deletedEntry{key, e})
		}
	})
	if err != nil {
		c.batch.Reset()
		return err
	}
	if err := c.commit(); err != nil {
		return err
	}
	for _, d := range deleted {
		c.s.ks.reclaimDeleted(d.key, d.e)
		c.notify(notifyGeneric, "del", d.key)
	}
	c.wr.Int(int64(len(deleted)))
	return nil
}

// deletedEntry is a key a command deletes and the entry it held.
type deletedEntry struct {
	key []byte
	e   entry
}

func cmdExists(c *conn, _ *command, args [][]byte) error {
	var n int64
	for _, key := range args[1:] {
		exists, err := c.s.ks.exists(c.reader(), &c.scratch, key)
		if err != nil {
			return err
		}
		if exists {
			n++
		}
	}
	c.wr.Int(n)
	return nil
}

func cmdType(c *conn, _ *command, args [][]byte) error {
	name, err := c.s.ks.typeOf(c.reader(), &c.scratch, args[1])
	if err != nil {
		return err
	}
	c.wr.SimpleString(name)
	return nil
}

// rename returns the handler of RENAME, or of RENAMENX when nx; the value
// keeps its expiry.
func rename(nx bool) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		src, dst := args[1], args[2]
		held, e, exists, err := c.lockSource(args)
		defer c.unlock(held)
		if err != nil {
			return err
		}
		if !exists {
			return redisError(msgNoSuchKey)
		}
		if bytes.Equal(src, dst) {
			if nx {
				c.wr.Int(0)
			} else {
				c.ok()
			}
			return nil
		}
		if nx {
			taken, err := c.s.ks.exists(c.reader(), &c.scratch, dst)
			if err != nil {
				return err
			}
			if taken {
				c.wr.Int(0)
				return nil
			}
		}
		if err := c.putCopy(&c.scratch, src, dst, e); err != nil {
			return err
		}
		c.s.ks.deleteKey(c.batch, &c.scratch, src)
		if err := c.commit(); err != nil {
			return err
		}
		c.s.ks.reclaimDeleted(src, e)
		c.signalReady(dst) // a client may be blocked on dst (blocking.go)
		// Redis deletes dst and adds it anew: "new" whether or not it
		// held a value.
		c.notifyNew(dst)
		c.notify(notifyGeneric, "rename_from", src)
		c.notify(notifyGeneric, "rename_to", dst)
		if nx {
			c.wr.Int(1)
		} else {
			c.ok()
		}
		return nil
	}
}

// expire returns the handler of EXPIRE (u inSeconds), PEXPIRE (inMillis),
// EXPIREAT (atSeconds) or PEXPIREAT (atMillis), with the NX/XX/GT/LT
// conditions of Redis 7. A time not in the future deletes the key. The
// value is rewritten with the new expiry under the key's lock, so no
// concurrent write is lost.
func expire(u timeArg) handler {
	return func(c *conn, cmd *command, args [][]byte) error {
		var nx, xx, gt, lt bool
		for _, a := range args[3:] {
			switch {
			case is(a, "NX"):
				nx = true
			case is(a, "XX"):
				xx = true
			case is(a, "GT"):
				gt = true
			case is(a, "LT"):
				lt = true
			default:
				return redisError("ERR Unsupported option " + string(a))
			}
		}
		if nx && (xx || gt || lt) {
			return redisError("ERR NX and XX, GT or LT options at the same time are not compatible")
		}
		if gt && lt {
			return redisError("ERR GT and LT options at the same time are not compatible")
		}
		when, ok := parseInt(args[2])
		if !ok {
			return redisError(msgNotInteger)
		}
		if u.seconds {
			if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
				return redisError(invalidExpire(cmd))
			}
			when *= 1000
		}
		now := time.Now().UnixMilli()
		if u.relative {
			if when > math.MaxInt64-now {
				return redisError(invalidExpire(cmd))
			}
			when += now
		}
		held := c.lock(args[1:2], 1)
		defer c.unlock(held)
		e, exists, err := c.getEntry(args[1])
		if err != nil {
			return err
		}
		volatile := !e.expireAt.IsZero()
		cur := e.expireAt.UnixMilli()
		if !exists || nx && volatile || xx && !volatile ||
			gt && (!volatile || when <= cur) || lt && volatile && when >= cur {
			c.wr.Int(0)
			return nil
		}
		if when <= now {
			c.s.ks.deleteKey(c.batch, &c.scratch, args[1])
			if err := c.commit(); err != nil {
				return err
			}
			c.s.ks.reclaimDeleted(args[1], e)
			c.notify(notifyGeneric, "del", args[1])
		} else {
			e.expireAt = time.UnixMilli(when)
			c.s.ks.putEntry(c.batch, &c.scratch, args[1], e)
			if err := c.commit(); err != nil {
				return err
			}
			c.notify(notifyGeneric, "expire", args[1])
		}
		c.wr.Int(1)
		return nil
	}
}

// ttl returns the handler of TTL (u inSeconds), PTTL (inMillis),
// EXPIRETIME (atSeconds) or PEXPIRETIME (atMillis): -2 for a missing key,
// -1 for a key without expiry.
func ttl(u timeArg) handler {
	return func(c *conn, _ *command, args [][]byte) error {
		e, exists, err := c.getEntry(args[1])
		switch {
		case err != nil:
			return err
		case !exists:
			c.wr.Int(-2)
			return nil
		case e.expireAt.IsZero():
			c.wr.Int(-1)
			return nil
		}
		at := e.expireAt.UnixMilli()
		left := max(at-time.Now().UnixMilli(), 0)
		switch u {
		case inSeconds:
			c.wr.Int((left + 500) / 1000)
		case inMillis:
			c.wr.Int(left)
		case atSeconds:
			c.wr.Int((at + 500) / 1000) // rounded, as Redis does
		default:
			c.wr.Int(at)
		}
		return nil
	}
}

func cmdPersist(c *conn, _ *command, args [][]byte) error {
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	e, exists, err := c.getEntry(args[1])
	if err != nil {
		return err
	}
	if !exists || e.expireAt.IsZero() {
		c.wr.Int(0)
		return nil
	}
	e.expireAt = time.Time{}
	c.s.ks.putEntry(c.batch, &c.scratch, args[1], e)
	if err := c.commit(); err != nil {
		return err
	}
	c.notify(notifyGeneric, "persist", args[1])
	c.wr.Int(1)
	return nil
}

// matchRange narrows a scan to the keys that can match pattern, starting
// no earlier than from.
func matchRange(pattern, from []byte) (lower, upper []byte) {
	prefix := literalPrefix(pattern)
	lower = from
	if bytes.Compare(prefix, from) > 0 {
		lower = prefix
	}
	return lower, prefixEnd(prefix)
}

func cmdKeys(c *conn, _ *command, args [][]byte) error {
	pattern := args[1]
	lower, upper := matchRange(pattern, nil)
	var keys [][]byte
	r, ns := c.readNS()
	err := c.s.ks.scanKeys(r, ns, lower, upper, func(key []byte, _ byte, _ bool) bool {
		if globMatch(pattern, key, false) {
			keys = append(keys, bytes.Clone(key))
		}
		return true
	})
	if err != nil {
		return err
	}
	c.wr.ArrayHeader(len(keys))
	for _, k := range keys {
		c.wr.Bulk(k)
	}
	return nil
}

// cmdScan implements SCAN cursor [MATCH pattern] [COUNT n] [TYPE type].
// The cursor names a server-side record of the next key (see
// cursorTable), so it is exact: every key present for the whole scan is
// returned exactly once, whatever is written meanwhile.
func cmdScan(c *conn, _ *command, args [][]byte) error {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		return redisError("ERR invalid cursor")
	}
	o, err := parseScanOpts(args[2:], true)
	if err != nil {
		return err
	}
	count, pattern, typeFilter := o.count, o.pattern, o.typ
	var from []byte
	if cursor != 0 {
		var ok bool
		if from, ok = c.s.cursors.get(cursor); !ok {
			return redisError("ERR invalid cursor")
		}
	}
	var keys [][]byte
	var next []byte
	lower, upper := from, []byte(nil)
	if pattern != nil {
		lower, upper = matchRange(pattern, from)
	}
	examined := int64(0)
	r, ns := c.readNS()
	err = c.s.ks.scanKeys(r, ns, lower, upper, func(key []byte, typ byte, _ bool) bool {
		if examined == count {
			next = bytes.Clone(key)
			return false
		}
		examined++
		if (typeFilter == "" || strings.EqualFold(typeFilter, typeNames[typ])) &&
			(pattern == nil || globMatch(pattern, key, false)) {
			keys = append(keys, bytes.Clone(key))
		}
		return true
	})
	if err != nil {
		return err
	}
	c.scanReplyHeader(next, len(keys))
	for _, k := range keys {
		c.wr.Bulk(k)
	}
	return nil
}

// cmdRandomKey implements RANDOMKEY (see keyspace.randomKey).
func cmdRandomKey(c *conn, _ *command, _ [][]byte) error {
	key, ok, err := c.s.ks.randomKey(c.readNS())
	switch {
	case err != nil:
		return err
	case !ok:
		c.wr.Null()
	default:
		c.wr.Bulk(key)
	}
	return nil
}

// init starts ids at a random point below 2^40, so that a cursor from
// before a restart is unlikely to name a position of a new scan, and ids
// stay exact even in clients that hold numbers as float64.
func (t *cursorTable) init() {
	t.next = rand.Uint64N(1<<40) + 1
	t.keys = make(map[uint64][]byte)
}
