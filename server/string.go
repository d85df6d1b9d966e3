package server

import (
	"time"

	"github.com/lsmgo-dev/lsmgo"
)

// Strings are stored whole under their 'k' key (keyspace.go): the header
// byte 's', then the value; or, when bit commands grew them past
// fragThreshold, in fragments (fragstring.go).

// stringValue is a decoded string entry.
type stringValue struct {
	val      []byte
	expireAt time.Time // zero: no expiry
	// frag is the metadata of a fragmented string, nil for a plain one.
	frag *collMeta
}

// length is the string's length in bytes.
func (v stringValue) length() int64 {
	if v.frag != nil {
		return v.frag.count
	}
	return int64(len(v.val))
}

// getStringRef reads the string at userKey through r; ok is false when it
// is absent, and err is errWrongType when the key holds another type. A
// fragmented string comes back unread: frag set, val nil (conn.get reads
// it whole).
func (ks *keyspace) getStringRef(r lsmgo.Reader, kb *keyBuf, userKey []byte) (v stringValue, ok bool, err error) {
	e, ok, err := ks.getEntry(r, kb, userKey)
	if !ok || err != nil {
		return v, false, err
	}
	switch e.typ {
	case typeString:
		return stringValue{val: e.payload, expireAt: e.expireAt}, true, nil
	case typeFragString:
		m, err := decodeMeta(userKey, e)
		if err != nil {
			return v, false, err
		}
		return stringValue{expireAt: e.expireAt, frag: &m}, true, nil
	}
	return v, false, errWrongType
}

// maxString is the longest string the server stores at userKey: what the
// engine accepts beside the engine key (the prefix byte and userKey), less
// the value's header byte. Every string write checks it before the write
// reaches a batch, so that no command the server accepted fails in the
// engine (and one oversized SET cannot fail a batch of pipelined ones).
func (ks *keyspace) maxString(ns nsID, userKey []byte) int64 {
	return ks.db.MaxValueLen(len(dataKey(nil, ns, nil))+len(userKey)) - 1
}

// putString adds a write of the string v at userKey to b. kb builds
// the key and the encoded value; Batch copies both. The
// caller has checked v against maxString.
func (ks *keyspace) putString(b *lsmgo.Batch, kb *keyBuf, userKey []byte, v stringValue) {
	ks.putEntry(b, kb, userKey, entry{typ: typeString, payload: v.val, expireAt: v.expireAt})
}

// get reads the string at key through the command's reader.
func (c *conn) get(key []byte) (v stringValue, exists bool, err error) {
	v, exists, err = c.getRef(key)
	if exists && v.frag != nil {
		v.val, err = c.s.ks.readFragString(c.reader(), key, *v.frag)
		exists = err == nil
	}
	return v, exists, err
}

// getRef reads the string at key through the command's reader, leaving a
// fragmented one unread (getStringRef). A fragmented string found by a
// read that holds no lock and no view is read again through a view the
// command then keeps (pinLate): its fragments, read later, must be of
// the version its metadata names, which a concurrent replace and the
// compaction that reclaims the old version's fragments would otherwise
// turn into zeros. Plain strings, one read, need no view.
func (c *conn) getRef(key []byte) (v stringValue, exists bool, err error) {
	v, exists, err = c.s.ks.getStringRef(c.reader(), &c.scratch, key)
	if !exists || v.frag == nil {
		return v, exists, err // the common case: one read, no view
	}
	if h := testHookMetaRead.Load(); h != nil {
		(*h)()
	}
	if c.pinLate() {
		v, exists, err = c.s.ks.getStringRef(c.reader(), &c.scratch, key)
	}
	return v, exists, err
}

// put writes one string through the connection's batch and commits it:
// a string read from fragments goes back to fragments, under a new
// version.
func (c *conn) put(key []byte, v stringValue) error {
	if v.frag != nil {
		return c.putFragString(key, v)
	}
	if int64(len(v.val)) > c.maxStringLen(key) {
		return errStringTooBig
	}
	c.s.ks.putString(c.batch, &c.scratch, key, v)
	return c.commit()
}

// putBits is put for the bit commands, which store a string longer than
// fragThreshold in fragments.
func (c *conn) putBits(key []byte, v stringValue) error {
	if len(v.val) > fragThreshold {
		return c.putFragString(key, v)
	}
	return c.put(key, v)
}

// putFragString writes v.val as a new fragmented string at key, whatever
// the key held, and commits.
func (c *conn) putFragString(key []byte, v stringValue) error {
	if int64(len(v.val)) > c.s.config().ProtoMaxBulkLen {
		return errStringTooBig
	}
	e, err := c.s.ks.newFragString(c.reader(), c.scratch.ns, key, v)
	if err != nil {
		return err
	}
	if err := e.write(0, v.val); err != nil {
		return err
	}
	e.flush(c.batch, &c.scratch)
	return c.commit()
}

// maxStringLen is the longest string a command may leave at key: Redis'
// proto-max-bulk-len, or less where the engine's entry limit is lower.
func (c *conn) maxStringLen(key []byte) int64 {
	return min(c.s.config().ProtoMaxBulkLen, c.s.ks.maxString(c.scratch.ns, key))
}

// bulkOrNull replies with v's value, or null when the key is absent.
func (c *conn) bulkOrNull(v stringValue, exists bool) {
	if exists {
		c.wr.Bulk(v.val)
	} else {
		c.wr.Null()
	}
}
