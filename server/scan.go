package server

import (
	"bytes"
	"strconv"
	"sync"
)

// The SCAN family: SCAN over the keyspace (cmd_keys.go) and HSCAN, SSCAN
// and ZSCAN over a collection share their options and their cursors,
// which are server-side positions.

// errInvalidCursor answers a cursor that is not a number, or not one the
// server handed out.
var errInvalidCursor = redisError("ERR invalid cursor")

// scanOpts are the parsed options of the SCAN family.
type scanOpts struct {
	pattern []byte
	count   int64
	// typ is SCAN's TYPE filter, upper-cased; "" when none.
	typ string
}

// parseScanOpts parses [MATCH pattern] [COUNT n], and with withType
// [TYPE type] (SCAN's only), with Redis' errors.
func parseScanOpts(opts [][]byte, withType bool) (o scanOpts, err error) {
	o.count = 10
	for i := 0; i < len(opts); i += 2 {
		if i+1 == len(opts) {
			return o, redisError(msgSyntax)
		}
		switch a, v := opts[i], opts[i+1]; {
		case is(a, "MATCH"):
			o.pattern = v
		case is(a, "COUNT"):
			n, ok := parseInt(v)
			if !ok {
				return o, redisError(msgNotInteger)
			}
			if n < 1 {
				return o, redisError(msgSyntax)
			}
			o.count = n
		case withType && is(a, "TYPE"):
			o.typ = string(toUpper(v))
		default:
			return o, redisError(msgSyntax)
		}
	}
	return o, nil
}

// scanColl implements HSCAN, SSCAN and ZSCAN: it examines up to COUNT
// elements under sub of the collection from where the cursor left off,
// and replies with the next cursor and the matching elements, each
// followed by its value as value prints it unless value is nil (SSCAN).
// Cursors are server-side positions, as for SCAN.
func (c *conn) scanColl(args [][]byte, typ byte, sub []byte, value func(dst, val []byte) []byte) error {
	cursor, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		return errInvalidCursor
	}
	key := args[1]
	defer c.pin()()
	m, exists, err := c.getColl(key, typ)
	if err != nil {
		return err
	}
	if !exists {
		// As in Redis, a missing key answers before the options are
		// parsed.
		c.scanReplyHeader(nil, 0)
		return nil
	}
	o, err := parseScanOpts(args[3:], false)
	if err != nil {
		return err
	}
	var from []byte
	if cursor != 0 {
		var ok bool
		if from, ok = c.s.cursors.get(cursor); !ok {
			return errInvalidCursor
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
		return err
	}
	c.scanReplyHeader(next, len(elems)+len(vals))
	for i := range elems {
		c.wr.Bulk(elems[i])
		if value != nil {
			c.wr.Bulk(vals[i])
		}
	}
	return nil
}

// scanReplyHeader starts a SCAN-family reply: the cursor that resumes at
// next ("0" when the scan is over), then the header of the n items that
// follow.
func (c *conn) scanReplyHeader(next []byte, n int) {
	c.wr.ArrayHeader(2)
	if next == nil {
		c.wr.BulkString("0")
	} else {
		c.wr.BulkString(strconv.FormatUint(c.s.cursors.put(next), 10))
	}
	c.wr.ArrayHeader(n)
}

// maxCursors bounds the SCAN positions the server remembers. A client that
// comes back with a cursor older than the newest maxCursors gets "ERR
// invalid cursor" and must restart its scan.
const maxCursors = 1 << 14

// cursorTable maps SCAN cursors to the key where the scan resumes. A
// server-side table keeps cursors exact and numeric — go-redis and other
// clients parse the cursor as an unsigned 64-bit integer — which no
// encoding of an arbitrary key into 64 bits could.
type cursorTable struct {
	mu    sync.Mutex
	next  uint64
	keys  map[uint64][]byte
	order []uint64 // FIFO ring of live ids, for eviction
	head  int
}

func init() {
	const g = "generic"
	w, wf, rf := flagWrite, flagWrite|flagFast, flagReadonly|flagFast
	register(
		spec{name: "del", arity: -2, flags: w, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Deletes one or more keys.", run: cmdDel},
		spec{name: "unlink", arity: -2, flags: wf, firstKey: 1, lastKey: -1, step: 1, group: g, since: "4.0.0",
			summary: "Asynchronously deletes one or more keys.", run: cmdDel},
		spec{name: "exists", arity: -2, flags: rf, firstKey: 1, lastKey: -1, step: 1, group: g, since: "1.0.0",
			summary: "Determines whether one or more keys exist.", run: cmdExists},
		spec{name: "type", arity: 2, flags: rf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Determines the type of value stored at a key.", run: cmdType},
		spec{name: "rename", arity: 3, flags: w, firstKey: 1, lastKey: 2, step: 1, group: g, since: "1.0.0",
			summary: "Renames a key and overwrites the destination.", run: rename(false)},
		spec{name: "renamenx", arity: 3, flags: wf, firstKey: 1, lastKey: 2, step: 1, group: g, since: "1.0.0",
			summary: "Renames a key only when the target key name doesn't exist.", run: rename(true)},
		spec{name: "expire", arity: -3, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Sets the expiration time of a key in seconds.", run: expire(inSeconds)},
		spec{name: "pexpire", arity: -3, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Sets the expiration time of a key in milliseconds.", run: expire(inMillis)},
		spec{name: "expireat", arity: -3, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.2.0",
			summary: "Sets the expiration time of a key to a Unix timestamp.", run: expire(atSeconds)},
		spec{name: "pexpireat", arity: -3, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", run: expire(atMillis)},
		spec{name: "ttl", arity: 2, flags: rf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "1.0.0",
			summary: "Returns the expiration time in seconds of a key.", run: ttl(inSeconds)},
		spec{name: "pttl", arity: 2, flags: rf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.6.0",
			summary: "Returns the expiration time in milliseconds of a key.", run: ttl(inMillis)},
		spec{name: "expiretime", arity: 2, flags: rf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "7.0.0",
			summary: "Returns the expiration time of a key as a Unix timestamp.", run: ttl(atSeconds)},
		spec{name: "pexpiretime", arity: 2, flags: rf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "7.0.0",
			summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", run: ttl(atMillis)},
		spec{name: "persist", arity: 2, flags: wf, firstKey: 1, lastKey: 1, step: 1, group: g, since: "2.2.0",
			summary: "Removes the expiration time of a key.", run: cmdPersist},
		spec{name: "keys", arity: 2, flags: flagReadonly, group: g, since: "1.0.0",
			summary: "Returns all key names that match a pattern.", run: cmdKeys},
		spec{name: "scan", arity: -2, flags: flagReadonly, group: g, since: "2.8.0",
			summary: "Iterates over the key names in the database.", run: cmdScan},
		spec{name: "randomkey", arity: 1, flags: flagReadonly, group: g, since: "1.0.0",
			summary: "Returns a random key name from the database.", run: cmdRandomKey},
	)
}

// put records key and returns its cursor id, never 0.
func (t *cursorTable) put(key []byte) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.next
	t.next++
	if len(t.order) < maxCursors {
		t.order = append(t.order, id)
	} else {
		delete(t.keys, t.order[t.head])
		t.order[t.head] = id
		t.head = (t.head + 1) % maxCursors
	}
	t.keys[id] = key
	return id
}

// get returns the resume key of cursor id. It is kept, so a client may
// retry a SCAN call whose reply it lost.
func (t *cursorTable) get(id uint64) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.keys[id]
	return k, ok
}

// smallColl is the size up to which HSCAN and SSCAN return a whole
// collection in one call whatever COUNT says, as Redis does for its
// compact encodings (hash-max-listpack-entries, set-max-intset-entries
// are 128 by default and 512): clients then need one round trip, and
// the replies match Redis'.
const smallColl = 128
