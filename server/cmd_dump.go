package server

import (
	"time"

	"github.com/lsmgo-dev/lsmgo/server/internal/rdb"
)

func init() {
	register(
		spec{name: "dump", arity: 2, flags: flagReadonly, firstKey: 1, lastKey: 1, step: 1, group: "generic", since: "2.6.0",
			summary: "Returns a serialized representation of the value stored at a key.", run: cmdDump},
		spec{name: "restore", arity: -4, flags: flagWrite | flagDenyOOM, firstKey: 1, lastKey: 1, step: 1, group: "generic", since: "2.6.0",
			summary: "Creates a key from the serialized representation of a value.", run: cmdRestore},
	)
}

// cmdDump implements DUMP key: the value in Redis 7.0's payload format
// (dump.go), read at one engine state.
func cmdDump(c *conn, _ *command, args [][]byte) error {
	defer c.pin()()
	e, exists, err := c.getEntry(args[1])
	if err != nil {
		return err
	}
	if !exists {
		c.wr.Null()
		return nil
	}
	p, err := c.s.ks.dumpValue(c.reader(), args[1], e, c.s.config().ProtoMaxBulkLen)
	if err != nil {
		return err
	}
	c.wr.Bulk(p)
	return nil
}

// restoreOptions are RESTORE's options after the payload.
type restoreOptions struct {
	replace, absTTL bool
	idle, freq      int64 // -1: not given
}

// parseRestoreOptions checks RESTORE's options in Redis' order: IDLETIME
// and FREQ exclude each other (the second is a syntax error).
func parseRestoreOptions(args [][]byte) (restoreOptions, error) {
	o := restoreOptions{idle: -1, freq: -1}
	for i := 0; i < len(args); i++ {
		more := i+1 < len(args)
		switch {
		case is(args[i], "REPLACE"):
			o.replace = true
		case is(args[i], "ABSTTL"):
			o.absTTL = true
		case is(args[i], "IDLETIME") && more && o.freq == -1:
			i++
			v, ok := parseInt(args[i])
			if !ok {
				return o, redisError(msgNotInteger)
			}
			if v < 0 {
				return o, redisError("ERR Invalid IDLETIME value, must be >= 0")
			}
			o.idle = v
		case is(args[i], "FREQ") && more && o.idle == -1:
			i++
			v, ok := parseInt(args[i])
			if !ok {
				return o, redisError(msgNotInteger)
			}
			if v < 0 || v > 255 {
				return o, redisError("ERR Invalid FREQ value, must be >= 0 and <= 255")
			}
			o.freq = v
		default:
			return o, redisError(msgSyntax)
		}
	}
	return o, nil
}

// cmdRestore implements RESTORE key ttl payload [REPLACE] [ABSTTL]
// [IDLETIME s] [FREQ f], with Redis' checks in Redis' order: options, an
// existing key (BUSYKEY), the TTL, the payload's trailer, its content. A
// TTL already past stores nothing (deleting the old value under REPLACE)
// and answers OK, as Redis does. FREQ sets the LFU counter under an LFU
// maxmemory-policy; IDLETIME is checked and has no effect: the access
// clock only moves forward (doc/server.md, "OBJECT").
func cmdRestore(c *conn, _ *command, args [][]byte) error {
	key := args[1]
	o, err := parseRestoreOptions(args[4:])
	if err != nil {
		return err
	}
	held := c.lock(args[1:2], 1)
	defer c.unlock(held)
	old, taken, err := c.getEntry(key)
	if err != nil {
		return err
	}
	if taken && !o.replace {
		return redisError("BUSYKEY Target key name already exists.")
	}
	ttl, ok := parseInt(args[2])
	if !ok {
		return redisError(msgNotInteger)
	}
	if ttl < 0 {
		return redisError("ERR Invalid TTL value, must be >= 0")
	}
	body, err := rdb.Open(args[3])
	if err != nil {
		return rdbError(err)
	}
	var expireAt time.Time
	if ttl > 0 {
		if !o.absTTL {
			ttl = satAdd(ttl, c.clock().UnixMilli())
		}
		expireAt = time.UnixMilli(ttl)
	}
	if err := c.s.ks.restoreValue(c.batch, &c.scratch, key, body, expireAt, c.maxStringLen(key)); err != nil {
		c.batch.Reset()
		return err
	}
	if !expireAt.IsZero() && !expireAt.After(c.clock()) {
		c.batch.Reset()
		if taken {
			c.s.ks.deleteKey(c.batch, &c.scratch, key)
		}
	}
	if c.batch.Count() > 0 {
		if err := c.commit(); err != nil {
			return err
		}
		if taken {
			c.s.ks.reclaimDeleted(key, old)
		}
		c.signalReady(key) // a client may be blocked on key (blocking.go)
		if lfu := c.s.lfu(); lfu != nil && o.freq >= 0 {
			lfu.set(key, c.clock().Unix(), uint32(o.freq))
		}
	}
	c.ok()
	return nil
}

// satAdd adds two non-negative numbers, saturating at the largest int64.
func satAdd(a, b int64) int64 {
	if a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}
